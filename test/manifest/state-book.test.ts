import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalSink } from '../../src/sink/local.ts';
import { realIo } from '../../src/sink/local-io.ts';
import { StateBook } from '../../src/manifest/state-book.ts';
import { directivePath, readState, statePath, writeDirective, writeState } from '../../src/manifest/state-store.ts';
import type { ResourceState } from '../../src/manifest/types.ts';

const rs = (watermark: string): ResourceState => ({ watermark, last_run_id: 'r', last_full_at: null });

/** A LocalSink that counts reads and writes per path, and can hold or fail the next state write. */
class CountingSink extends LocalSink {
  reads: string[] = [];
  writes: string[] = [];
  failNextWrite = false;
  hold: Promise<void> | undefined;
  readHold: Promise<void> | undefined;
  onRead: (() => void) | undefined;
  override async read(p: string): Promise<Buffer | undefined> {
    this.reads.push(p);
    const bytes = await super.read(p);
    this.onRead?.();
    await this.readHold; // what was read is kept: the answer is from before the hold
    return bytes;
  }
  override async writeAtomic(p: string, data: string | Buffer): Promise<undefined> {
    await this.hold;
    if (this.failNextWrite) {
      this.failNextWrite = false;
      throw new Error('disk full');
    }
    this.writes.push(p);
    return super.writeAtomic(p, data);
  }
}

describe('StateBook', () => {
  let dir: string;
  let sink: CountingSink;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'state-book-'));
    sink = new CountingSink(dir);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('batches changes asked together, and those that arrive while a write is in flight: every change kept, fewer writes, one read', async () => {
    const book = new StateBook(sink);
    book.hold('A1001');
    let release!: () => void;
    sink.hold = new Promise<void>((r) => (release = r));
    const names = Array.from({ length: 10 }, (_, i) => `resource_${i}`);
    const done = names.map((n) => book.update('uk', 'A1001', (s) => void (s.resources[n] = rs('2026-01-01T00:00:00.000Z'))));
    release();
    const states = await Promise.all(done);
    // changes asked together are written together
    expect(sink.writes).toEqual([statePath('uk', 'A1001')]);
    expect(Object.keys(states[9]!.state.resources).sort()).toEqual([...names].sort());
    // the school's directive is read once after each write, for every change the write held
    expect(new Set(states.map((w) => w.checked)).size).toBe(1);
    await Promise.all(states.map((w) => w.checked));
    expect(sink.reads.filter((p) => p === directivePath('A1001'))).toHaveLength(1);
    // a change asked while a write is in flight waits for it, then goes with the changes asked meanwhile
    let release2!: () => void;
    sink.hold = new Promise<void>((r) => (release2 = r));
    const first = book.update('uk', 'A1001', (s) => void (s.resources.x = rs('2026-01-03T00:00:00.000Z')));
    await new Promise((r) => setImmediate(r));
    const later = [1, 2, 3].map((i) => book.update('uk', 'A1001', (s) => void (s.resources[`y${i}`] = rs('2026-01-03T00:00:00.000Z'))));
    release2();
    await Promise.all([first, ...later]);
    expect(sink.writes).toHaveLength(3);
    // later changes start from what was written, without reading the file again
    await book.update('uk', 'A1001', (s) => void (s.resources.more = rs('2026-01-02T00:00:00.000Z')));
    expect(sink.reads.filter((p) => p === statePath('uk', 'A1001'))).toHaveLength(1);
    const onDisk = await readState(sink, 'uk', 'A1001');
    expect(Object.keys(onDisk.resources).sort()).toEqual([...names, 'x', 'y1', 'y2', 'y3', 'more'].sort());
  });

  it('a write that fails rejects every change of its batch and keeps none of them; the next batch starts from the file', async () => {
    await writeState(sink, { version: 1, school_id: 'A1002', region: 'uk', resources: { kept: rs('2026-01-01T00:00:00.000Z') } });
    const book = new StateBook(sink);
    book.hold('A1002');
    sink.failNextWrite = true;
    await expect(book.update('uk', 'A1002', (s) => void (s.resources.lost = rs('2026-01-02T00:00:00.000Z')))).rejects.toThrow('disk full');
    const { state: s } = await book.update('uk', 'A1002', (x) => void (x.resources.later = rs('2026-01-03T00:00:00.000Z')));
    expect(Object.keys(s.resources).sort()).toEqual(['kept', 'later']);
    expect(Object.keys((await readState(sink, 'uk', 'A1002')).resources).sort()).toEqual(['kept', 'later']);
  });

  it('a directive check answers from a read that began after it was asked; checks asked meanwhile share one read', async () => {
    const book = new StateBook(sink);
    book.hold('A1003');
    let release!: () => void;
    sink.readHold = new Promise<void>((r) => (release = r));
    const read = new Promise<void>((r) => (sink.onRead = r));
    const first = book.directive('A1003'); // read 1: finds no directive, then is held
    await read;
    sink.onRead = undefined;
    // a revocation arrives while read 1 is in flight; checks asked from now on must see it
    await writeDirective(sink, { version: 1, school_id: 'A1003', force_full_seq: 0, deactivated: null, updated_at: 'now' });
    const asked = [book.directive('A1003'), book.directive('A1003'), book.directive('A1003')];
    sink.readHold = undefined;
    release();
    expect(await first).toBeUndefined();
    for (const d of await Promise.all(asked)) expect(d?.school_id).toBe('A1003');
    // read 1, then one read for the three checks asked while it ran
    expect(sink.reads.filter((p) => p === directivePath('A1003'))).toHaveLength(2);
  });

  it('fsyncs the directory after a state write only when a change of the batch needs its name durable', async () => {
    const dirSyncs: string[] = [];
    const io = { ...realIo, fsyncDir: async (d: string) => void dirSyncs.push(d) };
    const book = new StateBook(new LocalSink(dir, { io }));
    book.hold('A1005');
    await book.update('uk', 'A1005', (s) => void (s.resources.a = rs('2026-01-01T00:00:00.000Z')));
    // the first write created the directory (its parents are fsynced), but the rename was not followed by one
    const after = dirSyncs.length;
    await book.update('uk', 'A1005', (s) => void (s.resources.b = rs('2026-01-01T00:00:00.000Z')));
    expect(dirSyncs).toHaveLength(after);
    await book.update('uk', 'A1005', (s) => void (s.resources.c = rs('2026-01-01T00:00:00.000Z')), { nameDurable: true });
    expect(dirSyncs.slice(after)).toEqual([join(dir, '_state', 'region=uk')]);
  });

  it('forgets a school once its last task is released, so memory follows the schools in flight', async () => {
    const book = new StateBook(sink);
    book.hold('A1004');
    book.hold('A1004');
    await book.update('uk', 'A1004', (s) => void (s.resources.a = rs('2026-01-01T00:00:00.000Z')));
    book.release('A1004');
    await book.update('uk', 'A1004', (s) => void (s.resources.b = rs('2026-01-01T00:00:00.000Z')));
    expect(sink.reads.filter((p) => p === statePath('uk', 'A1004'))).toHaveLength(1);
    book.release('A1004');
    // gone from memory: the next change (another run's, say) reads the file again
    await book.update('uk', 'A1004', (s) => void (s.resources.c = rs('2026-01-01T00:00:00.000Z')));
    expect(sink.reads.filter((p) => p === statePath('uk', 'A1004'))).toHaveLength(2);
    expect(Object.keys((await readState(sink, 'uk', 'A1004')).resources).sort()).toEqual(['a', 'b', 'c']);
  });
});
