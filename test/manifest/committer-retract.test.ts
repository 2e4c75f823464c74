import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalSink } from '../../src/sink/local.ts';
import { Committer } from '../../src/manifest/committer.ts';
import type { Manifest, ManifestTask, RunManifest } from '../../src/manifest/types.ts';

const RUN = '20260101T000000.000Z-abcd';

const task = (school: string, resource: string, extra: Partial<ManifestTask> = {}): ManifestTask => ({
  school_id: school,
  region: 'uk',
  resource,
  status: 'committed',
  mode: 'full',
  files: [{ table: resource, path: `${resource}/region=uk/school_id=${school}/${RUN}-0001.ndjson`, rows: 2, bytes: 10, sha256: 'x' }],
  rows: { [resource]: 2 },
  ...extra,
});

const deletion = (school: string, id: string): Manifest['deletions'][number] => ({
  school_id: school,
  type: 'achievement',
  id,
  deleted_at: '2026-01-01T00:00:00.000000Z',
  restored_at: null,
  detected_by: 'api',
});

describe('Committer.retract and snapshot', () => {
  let dir: string;
  let c: Committer;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'committer-retract-'));
    c = new Committer(new LocalSink(dir), { version: 1, run_id: RUN, started_at: '2026-01-01T00:00:00.000Z', format: 'ndjson' });
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("a committed task retracted after its school was purged is listed as skipped with no files, and the school's deletions go", async () => {
    const purged = task('A1001', 'achievements');
    const other = task('A1002', 'achievements');
    await c.commit({ task: purged, deletions: [deletion('A1001', 'x1')], promote: async () => undefined });
    await c.commit({ task: other, deletions: [deletion('A1002', 'y1')], promote: async () => undefined });
    c.retract(purged, { code: 'E_PURGED', message: 'school A1001: access revoked while the run was reading it' });

    const m = c.snapshot();
    expect(m.status).toBe('partial');
    expect(m.tasks).toEqual([
      {
        ...purged,
        status: 'skipped',
        files: [],
        rows: {},
        error: { code: 'E_PURGED', message: 'school A1001: access revoked while the run was reading it' },
      },
      other,
    ]);
    expect(m.deletions).toEqual([deletion('A1002', 'y1')]);
    // The task object the caller holds is not changed (it was written to a part as it was).
    expect(purged.status).toBe('committed');
  });

  it('retracting a task never listed adds it once, as skipped', () => {
    const t = task('A1001', 'achievements');
    c.retract(t, { code: 'E_PURGED', message: 'purged' });
    const m = c.snapshot();
    expect(m.tasks).toHaveLength(1);
    expect(m.tasks[0]).toMatchObject({ status: 'skipped', files: [], rows: {}, error: { code: 'E_PURGED' } });
  });

  it('retracting one checkpoint piece leaves the other pieces of the task as they were', async () => {
    const p1 = task('A1001', 'assessment_results', { checkpoint: { snapshot: RUN, seq: 1, final: false } });
    const p2 = task('A1001', 'assessment_results', { checkpoint: { snapshot: RUN, seq: 2, final: true } });
    await c.commit({ task: p1, deletions: [], promote: async () => undefined });
    await c.commit({ task: p2, deletions: [], promote: async () => undefined });
    c.retract(p2, { code: 'E_PURGED', message: 'purged' });
    const m = c.snapshot();
    expect(m.tasks.map((t) => [t.checkpoint?.seq, t.status, t.files.length])).toEqual([
      [1, 'committed', 1],
      [2, 'skipped', 0],
    ]);
  });

  it('snapshot: ok when every task committed, partial when one did not, interrupted when asked; nothing written', async () => {
    await c.commit({ task: task('A1002', 'school_meta'), deletions: [], promote: async () => undefined });
    await c.commit({ task: task('A1001', 'school_meta'), deletions: [], promote: async () => undefined });
    const ok = c.snapshot();
    expect(ok).toMatchObject({ version: 1, run_id: RUN, format: 'ndjson', status: 'ok' });
    expect(ok.tasks.map((t) => t.school_id)).toEqual(['A1001', 'A1002']); // sorted by school, then resource
    expect(Date.parse(ok.finished_at)).not.toBeNaN();
    expect(c.snapshot({ interrupted: true }).status).toBe('interrupted');

    c.record({ ...task('A1003', 'school_meta'), status: 'failed', files: [], rows: {}, error: { code: 'E_HTTP', message: 'x' } });
    expect(c.snapshot().status).toBe('partial');
    expect(c.snapshot({ interrupted: true }).status).toBe('interrupted');

    // snapshot() is what a run reports when the destination refuses the manifest: it writes nothing.
    expect(readdirSync(join(dir, '_manifests'))).toEqual([RUN]); // only the parts directory
  });

  it('a committed task that carries an error (listed, state not advanced) makes the run partial', async () => {
    await expect(
      c.commit({ task: task('A1001', 'achievements'), deletions: [], promote: () => Promise.reject(new Error('disk full')) }),
    ).rejects.toMatchObject({ code: 'E_STATE', listed: true });
    expect(c.snapshot().status).toBe('partial');
  });

  it('finish({ interrupted: true }) writes an interrupted run manifest; its part lists the retracted task', async () => {
    const t = task('A1001', 'achievements');
    await c.commit({ task: t, deletions: [], promote: async () => undefined });
    c.retract(t, { code: 'E_PURGED', message: 'purged' });
    const m = await c.finish({ interrupted: true });
    expect(m.status).toBe('interrupted');
    const onDisk = JSON.parse(readFileSync(join(dir, `_manifests/${RUN}.json`), 'utf8')) as RunManifest;
    expect(onDisk).toMatchObject({ version: 2, status: 'interrupted', summary: { tasks: { skipped: 1 }, failures_total: 1 } });
    expect(onDisk.parts.map((p) => p.path)).toEqual([`_manifests/${RUN}/part-00002.json`]);
    const part = JSON.parse(readFileSync(join(dir, onDisk.parts[0]!.path), 'utf8')) as Manifest;
    expect(part.tasks).toEqual([
      expect.objectContaining({ status: 'skipped', files: [], error: expect.objectContaining({ code: 'E_PURGED' }) }),
    ]);
  });
});
