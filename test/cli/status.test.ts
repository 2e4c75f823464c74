import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { statusCommandRun } from '../../src/cli/status.ts';
import { writeDirective } from '../../src/manifest/state-store.ts';
import type { Manifest } from '../../src/manifest/types.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { openSink } from '../../src/sink/index.ts';
import { LocalSink } from '../../src/sink/local.ts';
import type { Sink } from '../../src/sink/types.ts';
import { exportOnce, tempDir } from '../integration/helpers.ts';
import { startS3rver, type S3rverHandle } from '../helpers/s3rver.ts';
import { stubS3rverEnv } from '../helpers/s3rver-env.ts';

/**
 * `school-export status` against destinations a real export wrote (local and S3), with what a
 * running or failed run and the webhook receiver leave there added: a lease, a failed run's
 * manifest, a deactivated school.
 */
const NOW = new Date('2030-01-01T00:00:00.000Z');
const FAILED_RUN = '20291231T230000.000Z-beef';

async function capture(
  fn: (io: { out: NodeJS.WritableStream & { isTTY?: boolean }; err: NodeJS.WritableStream }) => Promise<void>,
  tty = false,
) {
  const out = Object.assign(new PassThrough(), { isTTY: tty });
  let text = '';
  out.on('data', (c: Buffer) => (text += c.toString()));
  await fn({ out, err: new PassThrough() });
  return text;
}

/** A version 1 run manifest of a run that started at `startedAt` and whose achievements task of A1001 failed. */
function failedRun(runId: string, startedAt: string, more: Manifest['tasks'] = []): Manifest {
  return {
    version: 1,
    run_id: runId,
    started_at: startedAt,
    finished_at: new Date(Date.parse(startedAt) + 42_000).toISOString(),
    format: 'ndjson',
    status: 'partial',
    tasks: [
      {
        school_id: 'A1001',
        region: 'uk',
        resource: 'achievements',
        status: 'failed',
        mode: 'incremental',
        files: [],
        rows: {},
        error: { code: 'E_HTTP_RETRIES', message: 'GET /achievements: 503 after 6 attempts' },
      },
      ...more,
    ],
    deletions: [],
  };
}

async function addRunArtifacts(sink: Sink): Promise<void> {
  const failed = failedRun(FAILED_RUN, '2029-12-31T23:00:00.000Z', [
    { school_id: 'A1001', region: 'uk', resource: 'schools', status: 'committed', mode: 'incremental', files: [], rows: { schools: 1 } },
  ]);
  await sink.writeAtomic(`_manifests/${FAILED_RUN}.json`, JSON.stringify(failed));
  await sink.writeAtomic(
    '_state/_locks/run.json',
    JSON.stringify({
      run_id: '20300101T000000.000Z-aaaa',
      host: 'node-7',
      pid: 4242,
      started_at: '2029-12-31T23:59:00.000Z',
      heartbeat_at: '2029-12-31T23:59:30.000Z',
    }),
  );
  await writeDirective(sink, {
    version: 1,
    school_id: 'A1002',
    force_full_seq: 0,
    deactivated: { reason: 'access revoked', at: '2029-12-30T10:00:00.000Z', event: 'accessRevoked' },
    updated_at: '2029-12-30T10:00:00.000Z',
  });
}

describe('school-export status', () => {
  let sb: Sandbox;
  beforeAll(async () => {
    sb = await startSandbox({ seed: 3, schools: 2, achievementsPerSchool: 30 });
  });
  afterAll(async () => {
    await sb?.close();
  });

  it('local destination: --json gives NDJSON per lease, run, table, school × table and deactivated school; the default is a summary', async () => {
    const t = tempDir('status-');
    try {
      const summary = await exportOnce(sb, t.dir, { format: 'ndjson', resources: ['schools', 'achievements'] });
      expect(summary.status).toBe('ok');
      await addRunArtifacts(new LocalSink(t.dir));

      const text = await capture((io) => statusCommandRun({ dest: t.dir, json: true }, io, NOW));
      const lines = text
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      const byType = (type: string) => lines.filter((l) => l.type === type);

      expect(byType('lock')).toEqual([
        expect.objectContaining({ run_id: '20300101T000000.000Z-aaaa', host: 'node-7', pid: 4242, heartbeat_age_seconds: 30 }),
      ]);
      const runs = byType('run');
      expect(runs.map((r) => r.run_id)).toEqual([FAILED_RUN, summary.runId]); // newest first
      expect(runs[0]).toMatchObject({ status: 'partial', duration_seconds: 42, failures: 1, tasks: 2, unchanged: 0, rows: 1 });
      expect(runs[1]).toMatchObject({ status: 'ok', failures: 0 });
      expect(runs[1].rows).toBeGreaterThan(0);

      const tasks = byType('task');
      const schools = [...new Set(tasks.map((x) => x.school_id))].sort();
      expect(schools).toEqual(['A1001', 'A1002']);
      for (const x of tasks) {
        expect(x.watermark).toMatch(/Z$/);
        expect(x.lag_seconds).toBe(Math.round((NOW.getTime() - Date.parse(x.watermark)) / 1000));
        expect(x.last_run_id).toBe(summary.runId);
        expect(x.last_full_at).not.toBeNull(); // the first run is a full one
      }
      const failing = tasks.filter((x) => x.last_failure);
      expect(failing).toEqual([
        expect.objectContaining({
          school_id: 'A1001',
          resource: 'achievements',
          last_failure: {
            run_id: FAILED_RUN,
            status: 'failed',
            code: 'E_HTTP_RETRIES',
            message: 'GET /achievements: 503 after 6 attempts',
          },
        }),
      ]);
      expect(byType('table')).toEqual([
        expect.objectContaining({ table: 'achievements', schools: 2, failing: 1, never_committed: 0, resuming: 0 }),
        expect.objectContaining({ table: 'schools', schools: 2, failing: 0 }),
      ]);
      expect(byType('deactivated')).toEqual([
        { type: 'deactivated', school_id: 'A1002', reason: 'access revoked', at: '2029-12-30T10:00:00.000Z', event: 'accessRevoked' },
      ]);

      for (const tty of [true, false]) {
        // the summary whether or not stdout is a terminal (a cron job's mail, a file): NDJSON only with --json
        const table = await capture((io) => statusCommandRun({ dest: t.dir }, io, NOW), tty);
        expect(table).toMatch(/RUN IN PROGRESS \(lease held\)/);
        expect(table).toMatch(/node-7\s+4242/);
        expect(table).toMatch(/LAST 2 RUNS/);
        expect(table).toMatch(/TABLES \(2 schools; /);
        expect(table).toMatch(/\n {0}achievements\s+2\s+\S+( \S+)?\s+\S+( \S+)?\s+0\s+1\s+0\n/);
        // the failing school first among the worst
        expect(table).toMatch(
          /WORST 4 [^\n]*\nschool[^\n]*\nA1001\s+uk\s+achievements\s+\S+\s+\S+.*E_HTTP_RETRIES in 20291231T230000\.000Z-beef/,
        );
        expect(table).toMatch(/DEACTIVATED BY WEBHOOKS/);
        expect(table).not.toContain('{"');
      }
      const failingText = await capture((io) => statusCommandRun({ dest: t.dir, failing: true }, io, NOW));
      expect(failingText).toMatch(/SCHOOLS AND TABLES, failing \(1\)\nschool.*\nA1001\s+uk\s+achievements.*E_HTTP_RETRIES/);
      const one = await capture((io) => statusCommandRun({ dest: t.dir, table: 'schools' }, io, NOW));
      expect(one).toMatch(/SCHOOLS AND TABLES: schools \(2\)/);
      expect(one.match(/^A100\d\s+\S+\s+schools\s/gm)).toHaveLength(2);
      expect(one).not.toMatch(/^A100\d\s+\S+\s+achievements\s/m);
      const all = await capture((io) => statusCommandRun({ dest: t.dir, schools: true }, io, NOW));
      expect(all.match(/^A100\d\s+\S+\s+(schools|achievements)\s/gm)).toHaveLength(4);
      const jsonOne = (await capture((io) => statusCommandRun({ dest: t.dir, table: 'schools', json: true }, io, NOW)))
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(jsonOne.filter((l) => l.type === 'task').map((l) => l.resource)).toEqual(['schools', 'schools']);
      await expect(statusCommandRun({ dest: t.dir, table: 'achievments' }, undefined, NOW)).rejects.toThrow(
        '--table achievments: this destination holds no such table (it holds achievements, schools)',
      );
    } finally {
      t.cleanup();
    }
  });

  it('a failure a later clean run committed is over: told by the state, without reading the parts of the clean run', async () => {
    const t = tempDir('status-clean-');
    try {
      const sink = new LocalSink(t.dir);
      const early = '20000101T000000.000Z-dead';
      const failed = failedRun(early, '2000-01-01T00:00:00.000Z');
      await sink.writeAtomic(`_manifests/${early}.json`, JSON.stringify(failed));
      const clean = await exportOnce(sb, t.dir, { format: 'ndjson', resources: ['schools', 'achievements'] });
      expect(clean.status).toBe('ok');
      // the clean run's parts go: a status that still read them would name them unreadable
      const parts = (await sink.list(`_manifests/${clean.runId}/`)).filter((p) => p.includes('/part-'));
      expect(parts.length).toBeGreaterThan(0);
      await sink.remove(parts);

      const lines = (await capture((io) => statusCommandRun({ dest: t.dir, json: true }, io, NOW)))
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(lines.filter((l) => l.type === 'task' && l.last_failure)).toEqual([]);
      expect(lines.filter((l) => l.type === 'run').map((r) => [r.run_id, r.status, r.failures])).toEqual([
        [clean.runId, 'ok', 0],
        [early, 'partial', 1],
      ]);
      const text = await capture((io) => statusCommandRun({ dest: t.dir }, io, NOW));
      expect(text).not.toMatch(/unreadable/);
    } finally {
      t.cleanup();
    }
  });

  it('an empty destination says so; --runs bounds the runs listed', async () => {
    const t = tempDir('status-empty-');
    try {
      const table = await capture((io) => statusCommandRun({ dest: t.dir }, io, NOW), true);
      expect(table).toMatch(/no run in progress/);
      expect(table).toMatch(/nothing exported to this destination/);
      await exportOnce(sb, t.dir, { format: 'ndjson', resources: ['schools'] });
      await exportOnce(sb, t.dir, { format: 'ndjson', resources: ['schools'] });
      const lines = (await capture((io) => statusCommandRun({ dest: t.dir, runs: 1, json: true }, io, NOW))).trim().split('\n');
      expect(lines.map((l) => JSON.parse(l)).filter((l) => l.type === 'run')).toHaveLength(1);
      await expect(statusCommandRun({ dest: t.dir, runs: 'x' as never }, undefined, NOW)).rejects.toThrow(/--runs x: expected an integer/);
    } finally {
      t.cleanup();
    }
  });

  describe('S3 destination (s3rver)', () => {
    let store: S3rverHandle;
    beforeAll(async () => {
      store = await startS3rver();
    });
    afterAll(async () => {
      vi.unstubAllEnvs();
      await store?.close();
    });

    it('reads state, manifests and the lease from s3://', async () => {
      stubS3rverEnv();
      const dest = `s3://${store.bucket}/status-test`;
      const summary = await exportOnce(sb, dest, { format: 'ndjson', resources: ['schools'], s3_endpoint: store.endpoint });
      expect(summary.status).toBe('ok');
      const sink = await openSink(dest, { s3: { endpoint: store.endpoint } });
      try {
        await addRunArtifacts(sink);
      } finally {
        await sink.close();
      }
      const lines = (await capture((io) => statusCommandRun({ dest, 's3-endpoint': store.endpoint, json: true }, io, NOW)))
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(lines.filter((l) => l.type === 'lock')).toHaveLength(1);
      expect(lines.filter((l) => l.type === 'run').map((r) => r.run_id)).toEqual([FAILED_RUN, summary.runId]);
      expect(lines.filter((l) => l.type === 'task').map((x) => `${x.school_id}/${x.resource}`)).toEqual(
        expect.arrayContaining(['A1001/schools', 'A1002/schools', 'A1001/achievements']),
      );
      expect(lines.filter((l) => l.type === 'deactivated')).toHaveLength(1);
    });
  });
});

describe('status: leases', () => {
  it('shows a lease whose run died as stale, not as a run in progress, and never a takeover marker as a lease', async () => {
    const { collectStatus } = await import('../../src/status/collect.ts');
    const { renderStatus } = await import('../../src/status/render.ts');
    const tmp = tempDir('status-leases-');
    try {
      const sink = new LocalSink(tmp.dir);
      const lease = (run: string, beat: string) =>
        JSON.stringify({ run_id: run, host: 'node-7', pid: 4242, started_at: beat, heartbeat_at: beat });
      await sink.writeAtomic('_state/_locks/run-s1of2.json', lease('20290101T000000.000Z-dead', '2029-01-01T00:00:00.000Z'));
      await sink.writeAtomic('_state/_locks/run-s1of2.json.takeover-20290101T000000.000Z-dead', JSON.stringify({ run_id: 'x', at: 'y' }));
      const report = await collectStatus(sink, { now: NOW });
      expect(report.locks.map((l) => [l.file, l.stale])).toEqual([['_state/_locks/run-s1of2.json', true]]);
      const text = renderStatus(report);
      expect(text).toContain('LEASE LEFT BY A RUN THAT DIED');
      expect(text).not.toContain('RUN IN PROGRESS');
      expect(text).not.toContain('undefined');
    } finally {
      tmp.cleanup();
    }
  });
});
