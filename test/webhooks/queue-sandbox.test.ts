import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { PipelineConfig } from '../../src/config/schema.ts';
import { acquireLease } from '../../src/manifest/lease.ts';
import { runExport } from '../../src/pipeline/run.ts';
import { startSandbox, type Sandbox, type SandboxOptions } from '../../src/sandbox/index.ts';
import { LocalSink } from '../../src/sink/local.ts';
import { readWebhookQueue } from '../../src/webhooks/queue-file.ts';
import type { RunQueueOptions } from '../../src/webhooks/run-queue.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../src/webhooks/server.ts';
import { readManifests } from '../helpers/read-exports.ts';
import { sandboxConfig } from '../integration/helpers.ts';
import { walk } from '../integration/child-run.ts';
import { inProcessRunner } from './in-process-runner.ts';
import { ManualTimers, until } from './manual-timers.ts';

/**
 * Issue 24: the sandbox sends bursts of approvals to a receiver with --run. Runs are the real
 * pipeline in-process (inProcessRunner) and the queue's clock is a ManualTimers, so "a run is
 * going", "a nightly run holds the lease" and "the backoff has passed" happen at known points.
 */
const SECRET = 'queue-secret-0123456789abcdef';
// Every write at a local destination is fsynced: on tmpfs (when there is one) the bursts measure
// the queue and the runs, not the disk.
const FAST_TMP = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
const PIPELINE: PipelineConfig = { format: 'ndjson', resources: ['schools', 'achievements'] };

interface World {
  root: string;
  dest: string;
  sink: LocalSink;
  sb: Sandbox;
  rx: WebhookReceiver;
  timers: ManualTimers;
  logs: any[];
  ipr: ReturnType<typeof inProcessRunner>;
}

let open: World | undefined;
const extraReceivers: WebhookReceiver[] = [];
afterEach(async () => {
  for (const r of extraReceivers.splice(0)) await r.close();
  if (!open) return;
  await open.rx.close();
  await open.sb.close();
  await rm(open.root, { recursive: true, force: true });
  open = undefined;
});

async function receiver(w: Pick<World, 'sink' | 'root'>, runner: RunQueueOptions['runner'], timers: ManualTimers, logs: any[], queue = {}) {
  return startWebhookReceiver({
    sink: w.sink,
    secret: SECRET,
    tokenDir: join(w.root, 'tokens'),
    purgeOnRevoke: true,
    runner,
    queue: { timers, collectMs: 1000, ...queue },
    log: (e) => logs.push(e),
  });
}

/**
 * A sandbox whose approved schools the receiver has not heard of yet (revoked while no webhook
 * URL was set), so that approving them sends schoolApproved.
 */
async function setup(o: { sandbox?: SandboxOptions; queue?: Partial<RunQueueOptions> } = {}): Promise<World> {
  const root = await mkdtemp(join(FAST_TMP, 'wh-queue-'));
  const dest = join(root, 'dest');
  await mkdir(dest);
  const sink = new LocalSink(dest);
  const sb = await startSandbox({ seed: 7, achievementsPerSchool: 2, ...o.sandbox });
  const timers = new ManualTimers();
  const logs: any[] = [];
  const ipr = inProcessRunner(sb, dest, PIPELINE);
  const rx = await receiver({ sink, root }, ipr.runner, timers, logs, o.queue);
  open = { root, dest, sink, sb, rx, timers, logs, ipr };
  return open;
}

async function unapprove(w: World, ids: string[]): Promise<void> {
  w.sb.control.setWebhookUrl(null);
  for (const id of ids) await w.sb.control.setAccess(id, 'revoked');
  w.sb.control.setWebhookUrl(w.rx.url);
}

async function approve(w: World, ids: string[]): Promise<void> {
  for (const id of ids) void w.sb.control.setAccess(id, 'approved');
  await w.sb.control.flushWebhooks();
}

const outcomes = (logs: any[]) => logs.filter((l) => l.event === 'school_outcome');

/** Each school exported once, by a run the receiver started, with every task committed in full. */
function expectExportedByReceiver(w: World, ids: string[]): void {
  const exported = outcomes(w.logs).filter((l) => l.outcome === 'exported');
  expect(exported.map((l) => l.school_id).sort()).toEqual([...ids].sort());
  const receiverRuns = new Set(w.ipr.runs.map((r) => r.outcome?.runId));
  const tasks = readManifests(w.dest);
  for (const id of ids) {
    const mine = tasks.filter((t) => t.school_id === id && receiverRuns.has(t.run_id));
    expect(mine.map((t) => t.resource).sort(), id).toEqual(['achievements', 'schools']);
    expect(
      mine.every((t) => t.status === 'committed' && t.mode === 'full'),
      id,
    ).toBe(true);
  }
}

/** No run the receiver started ended on the lease, or at all badly. */
function expectCleanRuns(w: World): void {
  for (const r of w.ipr.runs) expect(r.outcome, JSON.stringify(r.outcome)).toMatchObject({ code: 0 });
  expect(w.ipr.maxActive()).toBe(1);
  expect(w.logs.filter((l) => l.level === 'error' || l.level === 'warn')).toEqual([]);
}

describe('webhook run queue against the sandbox', () => {
  it('a burst of 8 approvals: one run, then approvals arriving while it goes are collected into the next', async () => {
    const w = await setup();
    const approved = ['A1001', 'A1002', 'A1003', 'A1004', 'A1005', 'A1006'];
    await unapprove(w, approved);
    await approve(w, ['A1001', 'A9001']);
    expect(w.ipr.runs).toEqual([]); // collecting: the run starts when the collect delay has passed
    const held = w.sb.control.hold({ school: 'A1001', resource: 'achievements' });
    w.timers.advance(1000);
    await held.reached; // the first run is going
    await approve(w, [...approved.slice(1), 'A9002']);
    expect(w.ipr.runs).toHaveLength(1);
    expect((await readWebhookQueue(w.sink))!.waiting.map((q) => q.school_id)).toEqual([
      'A1002',
      'A1003',
      'A1004',
      'A1005',
      'A1006',
      'A9002',
    ]);
    held.release();
    await w.rx.queue!.whenIdle();
    // the second run started as soon as the first ended, with everything collected meanwhile
    expect(w.ipr.runs.map((r) => r.req.schools)).toEqual([
      ['A1001', 'A9001'],
      ['A1002', 'A1003', 'A1004', 'A1005', 'A1006', 'A9002'],
    ]);
    expect(w.ipr.runs.every((r) => r.req.waitForLockSeconds === 3600 && r.req.shard.count === 1)).toBe(true);
    expectExportedByReceiver(w, [...approved, 'A9001', 'A9002']);
    expectCleanRuns(w);
    expect(await readWebhookQueue(w.sink)).toMatchObject({ waiting: [], running: [] });
  });

  it('a burst of 200 approvals with small data: chunked runs, one at a time, every school exported', async () => {
    const w = await setup({ sandbox: { schools: 200, achievementsPerSchool: 1 }, queue: { batchSize: 80 } });
    const ids = Array.from({ length: 200 }, (_, i) => `A${1001 + i}`);
    await unapprove(w, ids);
    await approve(w, ids);
    w.timers.advance(1000);
    await w.rx.queue!.whenIdle();
    expect(w.ipr.runs.map((r) => r.req.schools.length)).toEqual([80, 80, 40]);
    expectExportedByReceiver(w, ids);
    expectCleanRuns(w);
  });

  it('a nightly run holding the lease delays the queued schools, and does not fail them', async () => {
    const w = await setup();
    await unapprove(w, ['A1004', 'A1005']);
    // the nightly run, held at a known request while it holds the destination's lease
    const held = w.sb.control.hold({ school: 'A1002', resource: 'achievements' });
    const nightly = runExport(sandboxConfig(w.sb, w.dest, { ...PIPELINE, workers: 0 }), { token: w.sb.tokens.full });
    await held.reached;
    await approve(w, ['A1004', 'A1005']);
    w.timers.advance(1000);
    await until(() => w.logs.some((l) => l.event === 'run_waiting'));
    for (let i = 0; i < 6; i++) w.timers.advance(10_000); // a minute of lease polls: still waiting, nothing started
    await until(() => w.timers.nextIn() !== undefined);
    expect(w.ipr.runs).toEqual([]);
    expect((await readWebhookQueue(w.sink))!.waiting).toHaveLength(2);
    held.release();
    expect((await nightly).status).toBe('ok');
    w.timers.advance(10_000);
    await w.rx.queue!.whenIdle();
    expect(w.ipr.runs.map((r) => r.req.schools)).toEqual([['A1004', 'A1005']]);
    expectExportedByReceiver(w, ['A1004', 'A1005']);
    expectCleanRuns(w);
  });

  it('past --wait-for-lock the batch counts as a failed attempt and is retried after the backoff', async () => {
    const w = await setup({ queue: { waitForLockSeconds: 60 } });
    await unapprove(w, ['A1003']);
    const other = await acquireLease(w.sink, { runId: '20261122T010000.000Z-othr', shard: { index: 0, count: 1 }, waitSeconds: 0 });
    await approve(w, ['A1003']);
    w.timers.advance(1000);
    await until(() => w.logs.some((l) => l.event === 'run_waiting'));
    for (let i = 0; i < 6; i++) {
      await until(() => w.timers.nextIn() !== undefined);
      w.timers.advance(10_000);
    }
    await w.rx.queue!.whenIdle();
    expect(w.logs.find((l) => l.event === 'run_lock_timeout')).toMatchObject({ level: 'warn', holder: '20261122T010000.000Z-othr' });
    expect(w.logs.find((l) => l.event === 'run_retry')).toMatchObject({ school_id: 'A1003', attempts: 1, retry_in_seconds: 30 });
    expect((await readWebhookQueue(w.sink))!.waiting).toMatchObject([{ school_id: 'A1003', attempts: 1, not_before: expect.any(String) }]);
    expect(w.ipr.runs).toEqual([]);
    await other.release();
    await until(() => w.timers.nextIn() !== undefined);
    w.timers.advance(30_000);
    await w.rx.queue!.whenIdle();
    expectExportedByReceiver(w, ['A1003']);
  });

  it('a failed school is retried with backoff; after --run-attempts the receiver gives up, at error level', async () => {
    const w = await setup({ queue: { maxAttempts: 2 } });
    await unapprove(w, ['A1001', 'A1002', 'A1003']);
    w.sb.control.fault({ kind: '500', path: '/schools/A1002/achievements', times: 10_000 });
    w.sb.control.fault({ kind: '500', path: '/schools/A1003/achievements', times: 10_000 });
    await approve(w, ['A1001', 'A1002', 'A1003']);
    w.timers.advance(1000);
    await w.rx.queue!.whenIdle();
    expect(w.ipr.runs.map((r) => [r.req.schools, r.outcome?.code])).toEqual([[['A1001', 'A1002', 'A1003'], 1]]);
    expect(w.logs.filter((l) => l.event === 'run_retry').map((l) => [l.school_id, l.attempts, l.retry_in_seconds])).toEqual([
      ['A1002', 1, 30],
      ['A1003', 1, 30],
    ]);
    expect(w.timers.nextIn()).toBe(30_000);
    w.sb.control.clearFaults();
    w.sb.control.fault({ kind: '500', path: '/schools/A1003/achievements', times: 10_000 });
    w.timers.advance(30_000);
    await w.rx.queue!.whenIdle();
    expect(w.ipr.runs.map((r) => r.req.schools)).toEqual([
      ['A1001', 'A1002', 'A1003'],
      ['A1002', 'A1003'],
    ]);
    const byOutcome = outcomes(w.logs).map((l) => [l.school_id, l.level, l.outcome.replace(/: .*\(/, ': … (')]);
    expect(byOutcome).toEqual([
      ['A1001', 'info', 'exported'],
      ['A1002', 'info', 'exported'],
      ['A1003', 'error', 'deferred to the next run: … (the receiver gave up after 2 attempts)'],
    ]);
    expect(outcomes(w.logs).find((l) => l.school_id === 'A1003').outcome).toMatch(/^deferred to the next run: achievements: /);
    expect(await readWebhookQueue(w.sink)).toMatchObject({ waiting: [], running: [] });
  });

  it('a receiver restarted mid-queue resumes it: the stopped run and the waiting schools are exported', async () => {
    const w = await setup({ queue: { batchSize: 2 } });
    const ids = ['A1001', 'A1002', 'A1003', 'A1004', 'A1005'];
    await unapprove(w, ids);
    await approve(w, ids);
    const held = w.sb.control.hold({ path: /^\/v1\.0\/schools(\?|$)/ }); // the run's discovery: nothing committed yet
    w.timers.advance(1000);
    await held.reached;
    await w.rx.close(); // SIGTERM: the run going is stopped, its schools stay queued
    held.release();
    expect(w.ipr.runs[0]!.outcome).toMatchObject({ code: 143 });
    const kept = (await readWebhookQueue(w.sink))!;
    expect(kept.running).toEqual([]);
    expect(kept.waiting.map((q) => q.school_id).sort()).toEqual(ids);
    expect(kept.waiting.every((q) => q.attempts === 0)).toBe(true);

    const timers = new ManualTimers();
    const logs: any[] = [];
    const ipr = inProcessRunner(w.sb, w.dest, PIPELINE);
    w.rx = await receiver(w, ipr.runner, timers, logs, { batchSize: 2 });
    expect(logs[0]).toMatchObject({ event: 'queue_resumed', waiting: 5, runs_interrupted: 0 });
    await w.rx.queue!.whenIdle();
    expect(ipr.runs.map((r) => r.req.schools.length)).toEqual([2, 2, 1]);
    expect(ipr.maxActive()).toBe(1);
    expectExportedByReceiver({ ...w, logs, ipr }, ids);
  });

  it('a queue file left by a receiver that died mid-run is resumed, its running schools first', async () => {
    const w = await setup();
    await w.rx.close();
    await w.sink.writeAtomic(
      '_state/_webhooks/queue.json',
      JSON.stringify({
        version: 1,
        updated_at: '2026-11-22T01:00:00.000Z',
        receiver: { host: 'old-host', pid: 1, started_at: '2026-11-22T00:00:00.000Z' },
        waiting: [{ school_id: 'A1003', queued_at: '2026-11-22T00:59:00.000Z', attempts: 1, not_before: '2026-11-22T01:00:30.000Z' }],
        running: [{ shard: '0/1', schools: ['A1002'], started_at: '2026-11-22T00:58:00.000Z', pid: 1, host: 'old-host' }],
      }),
    );
    const logs: any[] = [];
    const ipr = inProcessRunner(w.sb, w.dest, PIPELINE);
    w.rx = await receiver(w, ipr.runner, new ManualTimers(), logs);
    expect(logs[0]).toMatchObject({ event: 'queue_resumed', waiting: 2, runs_interrupted: 1 });
    await w.rx.queue!.whenIdle();
    expect(ipr.runs.map((r) => r.req.schools)).toEqual([['A1002', 'A1003']]);
    expectExportedByReceiver({ ...w, logs, ipr }, ['A1002', 'A1003']);
  });

  it('revocation wins: a school revoked while queued is dropped; one revoked while its run goes is purged and stays purged', async () => {
    const w = await setup();
    await unapprove(w, ['A1001', 'A1002', 'A1003', 'A1004']);
    await approve(w, ['A1001', 'A1002']);
    await w.sb.control.setAccess('A1002', 'revoked');
    await w.sb.control.flushWebhooks();
    expect(outcomes(w.logs)).toMatchObject([
      { school_id: 'A1002', outcome: expect.stringMatching(/^dropped from the queue: access accessRevoked /) },
    ]);
    expect((await readWebhookQueue(w.sink))!.waiting.map((q) => q.school_id)).toEqual(['A1001']);

    // A1004 is revoked (with purge) while its run is reading it
    await approve(w, ['A1003', 'A1004']);
    const held = w.sb.control.hold({ school: 'A1004', resource: 'achievements' });
    w.timers.advance(1000);
    await held.reached;
    await w.sb.control.setAccess('A1004', 'revoked');
    await w.sb.control.flushWebhooks();
    held.release();
    await w.rx.queue!.whenIdle();
    expect(w.ipr.runs.map((r) => r.req.schools)).toEqual([['A1001', 'A1003', 'A1004']]);
    expect(outcomes(w.logs).find((l) => l.school_id === 'A1004')).toMatchObject({
      level: 'info',
      outcome: expect.stringMatching(/^dropped: access accessRevoked /),
    });
    expectExportedByReceiver({ ...w, logs: w.logs.filter((l) => l.school_id !== 'A1002' && l.school_id !== 'A1004') }, ['A1001', 'A1003']);
    // nothing of A1002 was ever exported, nothing of A1004 is left but the receiver's own records
    const left = walk(w.dest).filter(
      (p) => /A100[24]/.test(p) && !p.startsWith('_state/_directives/') && !p.startsWith('_state/_webhooks/'),
    );
    expect(left.filter((p) => !p.startsWith('_manifests/'))).toEqual([]);
  });
});
