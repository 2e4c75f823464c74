import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalSink } from '../../src/sink/local.ts';
import { Committer } from '../../src/manifest/committer.ts';
import { byRun, listDocs, runTasks } from '../../src/manifest/layout.ts';
import type { Manifest, ManifestTask, RunManifest } from '../../src/manifest/types.ts';

const RUN = '20260101T000000.000Z-abcd';
const task = (school: string, resource: string, files = 1): ManifestTask => ({
  school_id: school,
  region: 'uk',
  resource,
  status: 'committed',
  mode: 'full',
  files: Array.from({ length: files }, (_, i) => ({
    table: resource,
    path: `${resource}/region=uk/school_id=${school}/${RUN}-${String(i + 1).padStart(4, '0')}.ndjson`,
    rows: 1,
    bytes: 2,
    sha256: 'f'.repeat(64),
  })),
  rows: { [resource]: files },
});

function withDir<T>(body: (dir: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'committer-'));
  return body(dir).finally(() => rmSync(dir, { recursive: true, force: true }));
}

async function allTasks(sink: LocalSink): Promise<ManifestTask[]> {
  const out: ManifestTask[] = [];
  for await (const tasks of runTasks(sink, byRun(await listDocs(sink))[0]!)) out.push(...tasks);
  return out;
}

const partsOnDisk = (dir: string): string[] =>
  readdirSync(join(dir, '_manifests', RUN))
    .map((f) => `_manifests/${RUN}/${f}`)
    .sort();

describe('Committer', () => {
  it('lists a task in a durable part before promoting its state; the run manifest, written last, lists the parts that stay', () =>
    withDir(async (dir) => {
      const sink = new LocalSink(dir);
      const c = new Committer(sink, { version: 1, run_id: RUN, started_at: '2026-01-01T00:00:00Z', format: 'ndjson' });
      const seenAtPromote: string[][] = [];
      const promote = async () => {
        seenAtPromote.push(readdirSync(join(dir, '_manifests', RUN)));
      };
      await Promise.all([
        c.commit({ task: task('A1', 'achievements'), deletions: [], promote }),
        c.commit({ task: task('A2', 'achievements'), deletions: [], promote }),
      ]);
      expect(seenAtPromote.every((parts) => parts.length >= 1)).toBe(true);

      // A failing promotion: the task stays listed (its files are valid) with its error, once.
      const failing = c.commit({
        task: task('A3', 'achievements'),
        deletions: [],
        promote: async () => Promise.reject(new Error('disk full')),
      });
      await expect(failing).rejects.toMatchObject({ code: 'E_STATE', listed: true });
      c.record({ ...task('A4', 'achievements'), status: 'failed', files: [], rows: {}, error: { code: 'E_HTTP_RETRIES', message: 'x' } });

      const m = await c.finish();
      expect(m.status).toBe('partial');
      expect(m.tasks.map((t) => t.school_id)).toEqual(['A1', 'A2', 'A3', 'A4']);
      expect(m.tasks[2]!.error?.message).toMatch(/state not advanced: disk full/);
      const run = JSON.parse(readFileSync(join(dir, `_manifests/${RUN}.json`), 'utf8')) as RunManifest;
      expect(run).toMatchObject({
        version: 2,
        layout: 'parts',
        kind: 'export',
        run_id: RUN,
        status: 'partial',
        summary: { tasks: { committed: 3, failed: 1 }, rows: { achievements: 3 }, files: 3, failures_total: 2 },
      });
      // The commit batches' parts are replaced by the final ones, which stay and repeat every entry.
      expect(partsOnDisk(dir)).toEqual(run.parts.map((p) => p.path));
      const entries = await allTasks(sink);
      expect(entries.map((t) => [t.school_id, t.status, t.error?.code])).toEqual([
        ['A1', 'committed', undefined],
        ['A2', 'committed', undefined],
        ['A3', 'committed', 'E_STATE'],
        ['A4', 'failed', 'E_HTTP_RETRIES'],
      ]);
    }));

  it('bounds every part: a run with many tasks and deletions takes several parts, none over the limit', () =>
    withDir(async (dir) => {
      const sink = new LocalSink(dir);
      const limit = 8_000;
      const c = new Committer(
        sink,
        { version: 1, run_id: RUN, started_at: '2026-01-01T00:00:00Z', format: 'ndjson' },
        { partLimit: limit },
      );
      const deletion = (i: number): Manifest['deletions'][number] => ({
        school_id: 'A1',
        type: 'achievement',
        id: `A${i}`,
        deleted_at: '2026-01-01T00:00:00.000000Z',
        restored_at: null,
        detected_by: 'api',
      });
      // one commit batch far over a part (40 tasks and 300 deletion records), then a task of 60 files (over a part on its own)
      await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          c.commit({
            task: task(`A${100 + i}`, 'achievements'),
            deletions: i === 0 ? Array.from({ length: 300 }, (_, j) => deletion(j)) : [],
            promote: async () => undefined,
          }),
        ),
      );
      await c.commit({ task: task('A999', 'assessment_results', 60), deletions: [], promote: async () => undefined });
      const duringRun = partsOnDisk(dir);
      expect(duringRun.length).toBeGreaterThan(5);
      for (const p of duringRun) expect(statSync(join(dir, p)).size).toBeLessThanOrEqual(limit);

      await c.finish();
      const finals = partsOnDisk(dir);
      expect(finals.length).toBeGreaterThan(5);
      for (const p of [...finals, `_manifests/${RUN}.json`]) expect(statSync(join(dir, p)).size).toBeLessThanOrEqual(limit);
      const entries = await allTasks(sink);
      // every task is listed; the big one in entries of the same identity that together hold its 60 files
      expect(new Set(entries.map((t) => t.school_id)).size).toBe(41);
      const big = entries.filter((t) => t.school_id === 'A999');
      expect(big.length).toBeGreaterThan(1);
      expect(big.flatMap((t) => t.files.map((f) => f.path))).toEqual(task('A999', 'assessment_results', 60).files.map((f) => f.path));
      expect(big.map((t) => t.rows.assessment_results ?? 0)).toEqual([60, ...big.slice(1).map(() => 0)]);
      const deletions = finals.flatMap((p) => (JSON.parse(readFileSync(join(dir, p), 'utf8')) as Manifest).deletions);
      expect(deletions.map((d) => d.id)).toEqual(Array.from({ length: 300 }, (_, j) => `A${j}`));
    }));
});
