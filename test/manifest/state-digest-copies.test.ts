import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StateBook } from '../../src/manifest/state-book.ts';
import { DigestedStates, StateDigestWriter } from '../../src/manifest/state-digest.ts';
import { listStates, statePath, writeState, type WrittenState } from '../../src/manifest/state-store.ts';
import type { ResourceState, SchoolState } from '../../src/manifest/types.ts';
import { LocalSink } from '../../src/sink/local.ts';
import type { VersionedPath } from '../../src/sink/types.ts';

/**
 * The run's StateBook with the copies of states a digest holds (what a run on S3 has): the first
 * write of a school starts from the copy instead of reading the file, and never from a copy of a
 * file that was removed since (a purge during the run).
 */
const rs = (watermark: string): ResourceState => ({ watermark, last_run_id: 'r', last_full_at: null });

/** A local directory with S3's version tags: each write gets a new tag, which the listing shows. */
class VersionedSink extends LocalSink {
  reads: string[] = [];
  private readonly versions = new Map<string, string>();
  private n = 0;
  override async writeAtomic(p: string, data: string | Buffer, o?: { nameDurable?: boolean }): Promise<undefined> {
    await super.writeAtomic(p, data, o);
    this.versions.set(p, `"v${++this.n}"`);
    return this.versions.get(p) as undefined; // a tag, as S3's ETag
  }
  async listVersions(prefix: string): Promise<VersionedPath[]> {
    return (await this.list(prefix)).map((path) => ({ path, version: this.versions.get(path) }));
  }
  override async read(p: string): Promise<Buffer | undefined> {
    this.reads.push(p);
    return super.read(p);
  }
}

describe('StateBook with the copies of a digest', () => {
  let dir: string;
  let sink: VersionedSink;
  let copies: DigestedStates;
  const A: SchoolState = { version: 1, school_id: 'A1001', region: 'uk', resources: { achievements: rs('2026-01-01T00:00:00.000Z') } };

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'state-copies-'));
    sink = new VersionedSink(dir);
    const written: WrittenState = await writeState(sink, A);
    expect(written.version).toBe('"v1"');
    const digest = (await StateDigestWriter.open(sink, '20260101T000000.000Z-ab12'))!;
    digest.add(written);
    expect(await digest.commit()).toBe(1);
    copies = await DigestedStates.read(sink, await listStates(sink));
    expect(copies.size).toBe(1);
    sink.reads = [];
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("a school's first write starts from the copy: the state file is not read", async () => {
    const book = new StateBook(sink, { copies: () => copies });
    const w = await book.update('uk', 'A1001', (s) => {
      s.resources['deletions'] = rs('2026-02-01T00:00:00.000Z');
    });
    expect(Object.keys(w.state.resources).sort()).toEqual(['achievements', 'deletions']);
    expect(sink.reads.filter((p) => p === statePath('uk', 'A1001'))).toEqual([]);
    expect(copies.size).toBe(0); // let go once used
  });

  it('a copy of a file written since is not used: the listing shows another version', async () => {
    await writeState(sink, { ...A, resources: { achievements: rs('2026-03-01T00:00:00.000Z') } });
    const fresh = await DigestedStates.read(sink, await listStates(sink));
    expect(fresh.size).toBe(0);
    const book = new StateBook(sink, { copies: () => fresh });
    const w = await book.update('uk', 'A1001', () => undefined);
    expect(w.state.resources['achievements']!.watermark).toBe('2026-03-01T00:00:00.000Z');
  });

  it('after a purge removed the state file (forget), the next write starts from nothing, not from the copy', async () => {
    const book = new StateBook(sink, { copies: () => copies });
    book.hold('A1001');
    await sink.remove([statePath('uk', 'A1001')]);
    book.forget('uk', 'A1001');
    const w = await book.update('uk', 'A1001', (s) => {
      s.resources['deletions'] = rs('2026-02-01T00:00:00.000Z');
    });
    expect(Object.keys(w.state.resources)).toEqual(['deletions']);
    book.release('A1001');
  });

  it("the digest gets each school's state as last written, once its tasks are done", async () => {
    const settled: WrittenState[] = [];
    const book = new StateBook(sink, { copies: () => copies, onSettled: (w) => settled.push(w) });
    book.hold('A1001');
    await book.update('uk', 'A1001', (s) => void (s.resources['a'] = rs('2026-02-01T00:00:00.000Z')));
    await book.update('uk', 'A1001', (s) => void (s.resources['b'] = rs('2026-02-02T00:00:00.000Z')));
    expect(settled).toEqual([]);
    book.release('A1001');
    expect(settled).toHaveLength(1);
    const listed = (await sink.listVersions('_state/region=')).find((f) => f.path === statePath('uk', 'A1001'));
    expect(settled[0]!.version).toBe(listed!.version);
    expect(Object.keys((JSON.parse(settled[0]!.text) as SchoolState).resources).sort()).toEqual(['a', 'achievements', 'b']);
  });
});
