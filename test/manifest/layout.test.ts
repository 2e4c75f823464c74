import { describe, expect, it } from 'vitest';
import {
  byRun,
  docOf,
  listDocs,
  packParts,
  readDoc,
  runTasks,
  taskEntry,
  type ManifestSource,
  type PackItem,
} from '../../src/manifest/layout.ts';
import type { Manifest, ManifestTask, RunManifest } from '../../src/manifest/types.ts';

/** A destination in memory: what the layout's readers need of a sink. */
function memory(files: Record<string, string>): ManifestSource & { reads: string[] } {
  const reads: string[] = [];
  return {
    reads,
    async read(p) {
      reads.push(p);
      return p in files ? Buffer.from(files[p]!) : undefined;
    },
    async list(prefix) {
      return Object.keys(files)
        .filter((p) => p.startsWith(prefix))
        .sort();
    },
  };
}

const task = (school: string, note = ''): ManifestTask => ({
  school_id: school,
  region: 'uk',
  resource: 'achievements',
  status: 'committed',
  mode: 'incremental',
  files: [{ table: 'achievements', path: `achievements/region=uk/school_id=${school}/r-0001.parquet`, rows: 1, bytes: 1, sha256: note }],
  rows: { achievements: 1 },
});
const v1 = (runId: string, tasks: ManifestTask[], part?: number): string =>
  JSON.stringify({
    version: 1,
    run_id: runId,
    started_at: 'x',
    finished_at: 'x',
    format: 'parquet',
    status: part ? 'running' : 'ok',
    ...(part ? { part } : {}),
    tasks,
    deletions: [],
  } satisfies Manifest) + '\n';

async function collect(it: AsyncIterable<ManifestTask[]>): Promise<string[]> {
  const out: string[] = [];
  for await (const batch of it) out.push(...batch.map((t) => t.school_id));
  return out;
}

describe('manifest layout', () => {
  it('names documents by path and sorts a run’s parts before its run manifest, runs by id', async () => {
    expect(docOf('_manifests/R1/part-00012.json')).toEqual({ path: '_manifests/R1/part-00012.json', runId: 'R1', kind: 'part', part: 12 });
    expect(docOf('_manifests/R1.json')).toMatchObject({ kind: 'run', part: 0 });
    expect(docOf('_manifests/../x.json')).toBeUndefined();
    expect(docOf('achievements/x.json')).toBeUndefined();
    const src = memory({
      '_manifests/R2.json': '',
      '_manifests/R1/part-00010.json': '',
      '_manifests/R1/part-00002.json': '',
      '_manifests/R1.json': '',
    });
    expect((await listDocs(src)).map((d) => d.path)).toEqual([
      '_manifests/R1/part-00002.json',
      '_manifests/R1/part-00010.json',
      '_manifests/R1.json',
      '_manifests/R2.json',
    ]);
  });

  it('reads a run’s tasks from the parts its run manifest lists, from an old run manifest alone, or from every part of a run without one', async () => {
    const run: RunManifest = {
      version: 2,
      layout: 'parts',
      kind: 'export',
      run_id: 'R2',
      started_at: 'x',
      finished_at: 'x',
      format: 'parquet',
      status: 'ok',
      summary: { tasks: { committed: 2 }, rows: {}, files: 2, bytes: 2, deletions: 0, failures: [], failures_total: 0 },
      parts: [{ path: '_manifests/R2/part-00003.json', part: 3, tasks: 2, bytes: 1 }],
    };
    const src = memory({
      // an earlier version's run: its run manifest repeated every task and its parts were removed
      '_manifests/R1.json': v1('R1', [task('A1'), task('A2')]),
      // this version's run: a commit batch's part not removed yet (a crash), and the final part
      '_manifests/R2/part-00001.json': v1('R2', [task('A3')], 1),
      '_manifests/R2/part-00003.json': v1('R2', [task('A3'), task('A4')], 3),
      '_manifests/R2.json': JSON.stringify(run) + '\n',
      // a run killed before its run manifest
      '_manifests/R3/part-00001.json': v1('R3', [task('A5')], 1),
      '_manifests/R3/part-00002.json': v1('R3', [task('A6')], 2),
    });
    const runs = byRun(await listDocs(src));
    expect(await Promise.all(runs.map((r) => collect(runTasks(src, r))))).toEqual([
      ['A1', 'A2'],
      ['A3', 'A4'],
      ['A5', 'A6'],
    ]);
    expect(src.reads).not.toContain('_manifests/R2/part-00001.json');
  });

  it('streams an old run manifest of many MB in batches, with its header', async () => {
    const tasks = Array.from({ length: 6000 }, (_, i) => task(`A${i}`, 'f'.repeat(700)));
    const text = v1('R1', tasks);
    expect(text.length).toBeGreaterThan(4_000_000);
    const src = memory({ '_manifests/R1.json': text });
    const [doc] = await listDocs(src);
    const batches: number[] = [];
    for await (const chunk of readDoc(src, doc!, { batch: 1000 })) {
      expect(chunk.header).toMatchObject({ version: 1, run_id: 'R1', status: 'ok' });
      batches.push(chunk.tasks.length);
    }
    expect(batches).toEqual([1000, 1000, 1000, 1000, 1000, 1000]);
    await expect(async () => {
      for await (const _ of readDoc(memory({ '_manifests/R1.json': text.slice(0, -100) }), doc!)) void _;
    }).rejects.toThrow(/not valid JSON/);
  });
});

describe('taskEntry', () => {
  const base = { school_id: 'A1', region: 'uk', resource: 'achievements', files: [], rows: {} };
  const entries: ManifestTask[] = [
    taskEntry({ ...base, status: 'committed', mode: 'incremental', updated_after: '2026-03-10T06:00:00Z', watermark: 'w' }),
    taskEntry({ ...base, status: 'unchanged', mode: 'full', content_sha256: 'ab', read_at: 'r', unchanged_since: 's' }),
    taskEntry({ ...base, status: 'failed', mode: 'full', error: { code: 'E_HTTP', message: 'm' } }),
  ];

  it('gives every entry the same fields in the same order (a run holds one for every task)', () => {
    const keys = entries.map((e) => Object.keys(e).join(','));
    expect(new Set(keys)).toEqual(new Set([keys[0]]));
  });

  it('writes only the fields that are set, in the declared order', () => {
    expect(JSON.stringify(entries[1])).toBe(
      '{"school_id":"A1","region":"uk","resource":"achievements","status":"unchanged","mode":"full","files":[],"rows":{},"content_sha256":"ab","read_at":"r","unchanged_since":"s"}',
    );
  });

  it('shares one frozen empty file list and row count between entries, and keeps the others', () => {
    expect(entries[0]!.files).toBe(entries[1]!.files);
    expect(entries[0]!.rows).toBe(entries[2]!.rows);
    expect(Object.isFrozen(entries[0]!.files) && Object.isFrozen(entries[0]!.rows)).toBe(true);
    // a change to the shared ones would reach every entry: it throws instead
    expect(() => entries[0]!.files.push({ table: 't', path: 'p', sha256: 's', rows: 1, bytes: 1 })).toThrow(TypeError);
    expect(() => (entries[0]!.rows.achievements = 1)).toThrow(TypeError);
    const files = [{ table: 'achievements', path: 'p', sha256: 's', rows: 2, bytes: 9 }];
    const rows = { achievements: 2 };
    const written = taskEntry({ ...base, status: 'committed', mode: 'full', files, rows });
    expect(written.files).toBe(files);
    expect(written.rows).toBe(rows);
  });
});

describe('packParts', () => {
  const task = (i: number): PackItem<number> => ({
    kind: 'task',
    value: taskEntry({
      school_id: `A${1000 + i}`,
      region: 'uk',
      resource: 'achievements',
      status: 'unchanged',
      mode: 'full',
      files: [],
      rows: {},
    }),
    owner: i,
  });

  it('yields each part once it is full, before reading the entries that follow (a run holds one part as text, not all)', () => {
    const read: number[] = [];
    function* entries(): Generator<PackItem<number>> {
      for (let i = 0; i < 1000; i++) {
        read.push(i);
        yield task(i);
      }
    }
    const parts = packParts((n) => ({ run_id: 'r', part: n }), 1, entries(), 4096);
    const first = parts.next();
    expect(first.done).toBe(false);
    expect(read.length).toBeLessThan(100);
    const all = [first.value!, ...parts];
    expect(all.reduce((a, p) => a + p.tasks, 0)).toBe(1000);
    for (const p of all) expect(Buffer.byteLength(p.text)).toBeLessThanOrEqual(4096);
    expect(all.map((p) => JSON.parse(p.text).part)).toEqual(all.map((_, i) => i + 1));
  });
});
