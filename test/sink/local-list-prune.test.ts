import * as fsp from 'node:fs/promises';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LocalSink } from '../../src/sink/index.ts';

// readdir stays the real one; the spy only records which folders the listing opened
vi.mock('node:fs/promises', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs/promises')>();
  return { ...real, readdir: vi.fn(real.readdir) };
});

let root: string;
beforeEach(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'sink-prune-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const opened = () =>
  vi
    .mocked(fsp.readdir)
    .mock.calls.map((c) => path.relative(root, String(c[0])).split(path.sep).join('/'))
    .sort();

describe('LocalSink.list by prefix', () => {
  it('enters only the folders whose paths can start with the prefix (the state listing skips the per-school id lists)', async () => {
    const sink = new LocalSink(root);
    const files = [
      '_state/region=uk/school_id=A1.json',
      '_state/region=apac/school_id=A2.json',
      '_state/regional.json',
      '_state/ids/region=uk/school_id=A1/achievements-R1.json.gz',
      '_state/ids/region=uk/school_id=A3/achievements-R1.json.gz',
      '_state/_locks/lease.json',
    ];
    for (const p of files) await sink.writeAtomic(p, p);
    vi.mocked(fsp.readdir).mockClear();

    expect(await sink.list('_state/region=')).toEqual(['_state/region=apac/school_id=A2.json', '_state/region=uk/school_id=A1.json']);
    expect(opened()).toEqual(['_state', '_state/region=apac', '_state/region=uk']);

    vi.mocked(fsp.readdir).mockClear();
    expect(await sink.list('_state/region')).toEqual([
      '_state/region=apac/school_id=A2.json',
      '_state/region=uk/school_id=A1.json',
      '_state/regional.json',
    ]);
    expect(opened()).not.toContain('_state/ids');

    vi.mocked(fsp.readdir).mockClear();
    expect(await sink.list('_state/ids/region=uk/school_id=A1/')).toEqual(['_state/ids/region=uk/school_id=A1/achievements-R1.json.gz']);
    expect(opened()).toEqual(['_state/ids/region=uk/school_id=A1']);

    expect((await sink.list('')).sort()).toEqual([...files].sort());
  });
});
