import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { statusCommandRun } from '../../src/cli/status.ts';
import { collectStatus } from '../../src/status/collect.ts';
import { PROGRESS_FROM_SCHOOLS, readingProgress } from '../../src/status/reading-progress.ts';
import { LocalSink } from '../../src/sink/local.ts';
import { FakeTerminal } from '../helpers/fake-terminal.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A destination holding only `n` schools' state files (what status lists and reads per school). */
function destinationWithStates(n: number): string {
  const dest = mkdtempSync(join(tmpdir(), 'status-progress-'));
  dirs.push(dest);
  mkdirSync(join(dest, '_state', 'region=uk'), { recursive: true });
  for (let i = 0; i < n; i++) {
    const id = `A${1000 + i}`;
    const state = {
      version: 1,
      school_id: id,
      region: 'uk',
      resources: { achievements: { watermark: '2029-12-31T00:00:00.000Z', last_run_id: '20291231T000000.000Z-aaaa', last_full_at: null } },
    };
    writeFileSync(join(dest, '_state', 'region=uk', `school_id=${id}.json`), JSON.stringify(state));
  }
  return dest;
}

/** A terminal that also counts the writes it received. */
function terminal(columns = 80): FakeTerminal & { writes: number } {
  const t = Object.assign(new FakeTerminal(columns), { writes: 0 });
  const write = t.write.bind(t);
  t.write = (s: string) => {
    t.writes += 1;
    return write(s);
  };
  return t;
}

describe('status: progress while reading the state files', () => {
  it('one line on an 80-column terminal, redrawn at most once a percent, erased at the end', () => {
    const t = terminal(80);
    const p = readingProgress(t)!;
    for (let read = 1; read <= 12_345; read++) {
      p.update(read, 12_345);
      // redrawn when the percent changes: 48% began at 5,926
      if (read === 6_000) expect(t.screen()).toEqual(['status: read 5,926 of 12,345 state files (48%)']);
    }
    expect(t.screen()).toEqual(['status: read 12,345 of 12,345 state files (100%)']);
    expect(t.writes).toBeLessThanOrEqual(101);
    p.done();
    expect(t.all()).toEqual([]);
    expect(t.wraps).toBe(0);
  });

  it('cut to a narrow terminal, so the next redraw erases it whole', () => {
    const t = terminal(30);
    const p = readingProgress(t)!;
    for (let read = 1; read <= 2_000; read++) p.update(read, 2_000);
    expect(t.screen()).toEqual(['status: read 2,000 of 2,000 s']);
    p.done();
    expect(t.all()).toEqual([]);
    expect(t.wraps).toBe(0);
  });

  it('nothing when stderr is not a terminal, and nothing below the threshold', () => {
    expect(readingProgress(new PassThrough())).toBeUndefined();
    const t = terminal();
    const p = readingProgress(t)!;
    for (let read = 1; read < PROGRESS_FROM_SCHOOLS; read++) p.update(read, PROGRESS_FROM_SCHOOLS - 1);
    p.done();
    expect(t.writes).toBe(0);
  });

  it('collectStatus reports every state file read, with the total', async () => {
    const calls: [number, number][] = [];
    await collectStatus(new LocalSink(destinationWithStates(3)), { onStateRead: (read, total) => calls.push([read, total]) });
    expect(calls).toEqual([
      [1, 3],
      [2, 3],
      [3, 3],
    ]);
  });

  it('the command shows it on a terminal and leaves only the report on stdout', async () => {
    const dest = destinationWithStates(PROGRESS_FROM_SCHOOLS);
    const err = terminal();
    const out = new PassThrough();
    let text = '';
    out.on('data', (c: Buffer) => (text += c.toString()));
    await statusCommandRun(
      { dest },
      { out, err: err as unknown as NodeJS.WritableStream & { isTTY: boolean } },
      new Date('2030-01-01T00:00:00.000Z'),
    );
    expect(err.writes).toBeGreaterThan(1);
    expect(err.all()).toEqual([]);
    expect(text).not.toContain('state files');
    expect(text).toMatch(/achievements\s+1,000/);
  });
});
