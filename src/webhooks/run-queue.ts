import { hostname } from 'node:os';
import pLimit from 'p-limit';
import { oneLine } from '../errors.ts';
import { readDirective } from '../manifest/state-store.ts';
import type { Sink } from '../sink/types.ts';
import type { ChildRun, ChildRunner, RunOutcome } from './child-run.ts';
import { blockingLease, laneOf } from './lanes.ts';
import { QueueSaver, readWebhookQueue, type QueueFile, type QueuedSchool } from './queue-file.ts';
import { schoolResults, type SchoolResult } from './run-results.ts';
import { realTimers, type Timers } from './timers.ts';
import { logOutcome, WaitingList, type LogFn } from './waiting-list.ts';

/**
 * One queue of approved schools per destination, and at most `maxRuns` runs at a time (default
 * one). An approval puts its school in the queue; a run starts for up to `batchSize` waiting
 * schools (`--schools A,B,C`) once the destination's lease is free, and approvals arriving while
 * it goes are collected for the next one, which starts as soon as it ends. What each run did is
 * read from its manifest: schools it did not commit are retried with backoff, and each school's
 * outcome is logged once. The queue is kept in the destination (queue-file.ts) after every change.
 */
export interface RunQueueOptions {
  sink: Sink;
  runner: ChildRunner;
  log: LogFn;
  /** Runs at a time for this destination (each then takes shard I of N); default 1. */
  maxRuns?: number;
  /** Schools per run at most; default 200 (a run's discovery costs the same for 1 school or 200). */
  batchSize?: number;
  /** How long a batch waits for the destination's lease (a nightly run) before it counts as a failed attempt; default 3600 s. */
  waitForLockSeconds?: number;
  /** Runs a school gets before the receiver gives up on it (it stays a full-refresh directive for the next nightly run); default 5. */
  maxAttempts?: number;
  /** Wait before the first retry, doubled for each further one up to maxBackoffSeconds; default 30 s and 1800 s. */
  backoffSeconds?: number;
  maxBackoffSeconds?: number;
  /** An approval to an idle queue waits this long for others to join its run; default 1000 ms. */
  collectMs?: number;
  /** How often a batch waiting for the lease looks again; default 10 s. */
  leasePollMs?: number;
  /** A run going longer than this is stopped (SIGTERM) and its uncommitted schools retried; 0 (default): no limit. */
  runTimeoutSeconds?: number;
  timers?: Timers;
}

interface Running {
  entries: QueuedSchool[];
  startedAt: string;
  child?: ChildRun;
  timeout?: unknown;
  timedOut?: boolean;
  ended: Promise<void>;
}

interface Lane {
  index: number;
  running?: Running;
  timer?: { handle: unknown; at: number };
  /** Set while the lane is being looked at (lease and directive reads); settles when that ends. */
  pumping?: Promise<void>;
  pumpAgain?: boolean;
  /** Since when the due schools wait for a lease held by another run. */
  leaseWaitSince?: number;
}

const HOST = hostname();

export const QUEUE_DEFAULTS = {
  maxRuns: 1,
  batchSize: 200,
  waitForLockSeconds: 3600,
  maxAttempts: 5,
  backoffSeconds: 30,
  maxBackoffSeconds: 1800,
  collectMs: 1000,
  leasePollMs: 10_000,
  runTimeoutSeconds: 0,
} as const;

export class RunQueue {
  private readonly waiting: WaitingList;
  private readonly lanes: Lane[];
  private readonly timers: Timers;
  private readonly o: Required<Omit<RunQueueOptions, 'timers'>>;
  private readonly receiver: QueueFile['receiver'];
  private stopping = false;
  private idleWaiters: (() => void)[] = [];
  private readonly saver: QueueSaver;

  private constructor(opts: RunQueueOptions) {
    this.timers = opts.timers ?? realTimers;
    this.o = { ...QUEUE_DEFAULTS, ...stripUndefined(opts) } as RunQueue['o'];
    this.lanes = Array.from({ length: Math.max(1, this.o.maxRuns) }, (_, index) => ({ index }));
    this.receiver = { host: HOST, pid: process.pid, started_at: this.iso() };
    this.waiting = new WaitingList(this.o, () => this.timers.now(), this.o.log);
    this.saver = new QueueSaver(this.o.sink, () => this.snapshot(), this.o.log);
  }

  /** Opens the destination's queue: schools a stopped (or crashed) receiver left are taken up again. */
  static async open(opts: RunQueueOptions): Promise<RunQueue> {
    const q = new RunQueue(opts);
    const kept = await readWebhookQueue(opts.sink);
    if (kept) {
      // a run that was going when the receiver stopped committed what its manifest says; its
      // schools are asked for again (a school already exported costs one incremental pass)
      q.waiting.restore(kept);
      if (q.waiting.size) {
        q.log({ event: 'queue_resumed', level: 'info', waiting: q.waiting.size, runs_interrupted: kept.running.length });
      }
    }
    await q.saver.save();
    for (const lane of q.lanes) q.pump(lane);
    return q;
  }

  /** An approved school: queued for the next run (once, however often it is approved meanwhile). Resolves once the queue is saved. */
  async add(schoolId: string): Promise<void> {
    if (this.stopping) return;
    const lane = this.laneFor(schoolId);
    this.waiting.approve(schoolId);
    this.log({ event: 'run_queued', level: 'info', school_id: schoolId, waiting: this.waiting.size });
    const saved = this.saver.save();
    if (!lane.running && lane.leaseWaitSince === undefined) this.schedule(lane, this.o.collectMs);
    await saved;
  }

  /** Access revoked or declined: a waiting school leaves the queue (a run going for it finds the directive and keeps nothing of it). */
  async drop(schoolId: string, reason: string): Promise<void> {
    if (!this.waiting.remove(schoolId)) return;
    logOutcome(this.o.log, schoolId, 'info', `dropped from the queue: ${reason}`);
    await this.saver.save();
    this.checkIdle();
  }

  /** The queue as it would be written now (for tests and `status`). */
  snapshot(): QueueFile {
    return {
      version: 1,
      updated_at: this.iso(),
      receiver: this.receiver,
      waiting: this.waiting.snapshot(),
      running: this.lanes.flatMap((l) =>
        l.running
          ? [
              {
                shard: `${l.index}/${this.lanes.length}`,
                schools: l.running.entries.map((e) => e.school_id),
                started_at: l.running.startedAt,
                ...(l.running.child?.pid !== undefined ? { pid: l.running.child.pid } : {}),
                host: HOST,
              },
            ]
          : [],
      ),
    };
  }

  /** Resolves when no run is going and no waiting school is due (later retries may still be waiting). */
  whenIdle(): Promise<void> {
    return new Promise((resolve) => {
      this.idleWaiters.push(resolve);
      this.checkIdle();
    });
  }

  /**
   * Stops the queue: nothing new starts, running runs get SIGTERM (they stop at the next page and
   * commit nothing half-written), and the queue is saved with every school not exported still in
   * it, for the next start.
   */
  async close(): Promise<void> {
    this.stopping = true;
    for (const lane of this.lanes) this.clearTimer(lane);
    await Promise.all(this.lanes.flatMap((l) => (l.pumping ? [l.pumping] : []))); // a look at the lane under way starts nothing now
    const going = this.lanes.flatMap((l) => (l.running ? [l.running] : []));
    for (const r of going) r.child?.stop();
    await Promise.all(going.map((r) => r.ended));
    await this.saver.save();
  }

  private laneFor(schoolId: string): Lane {
    return this.lanes[laneOf(schoolId, this.lanes.length)]!;
  }

  private shard(lane: Lane): { index: number; count: number } {
    return { index: lane.index, count: this.lanes.length };
  }

  private iso(ms = this.timers.now()): string {
    return new Date(ms).toISOString();
  }

  private log(e: Parameters<LogFn>[0]): void {
    this.o.log(e);
  }

  // --- scheduling -----------------------------------------------------------------------------

  private schedule(lane: Lane, ms: number): void {
    if (this.stopping) return;
    const at = this.timers.now() + Math.max(0, ms);
    if (lane.timer && lane.timer.at <= at) return;
    this.clearTimer(lane);
    lane.timer = {
      at,
      handle: this.timers.setTimeout(() => {
        lane.timer = undefined;
        this.pump(lane);
      }, ms),
    };
  }

  private clearTimer(lane: Lane): void {
    if (lane.timer) this.timers.clearTimeout(lane.timer.handle);
    lane.timer = undefined;
  }

  /** Looks at the lane once at a time (awaits inside: lease and directive reads). */
  private pump(lane: Lane): void {
    if (lane.pumping) {
      lane.pumpAgain = true;
      return;
    }
    lane.pumping = (async () => {
      try {
        do {
          lane.pumpAgain = false;
          await this.pumpOnce(lane);
        } while (lane.pumpAgain && !this.stopping);
      } catch (e) {
        // the destination could not be read: look again later, the schools stay queued
        this.log({ event: 'queue_failed', level: 'error', error: oneLine(e) });
        this.schedule(lane, this.o.leasePollMs);
      } finally {
        lane.pumping = undefined;
        this.checkIdle();
      }
    })();
  }

  private due(lane: Lane, now: number): { due: QueuedSchool[]; later: number | undefined } {
    return this.waiting.due((id) => laneOf(id, this.lanes.length) === lane.index, now);
  }

  private async pumpOnce(lane: Lane): Promise<void> {
    if (this.stopping || lane.running) return;
    const now = this.timers.now();
    const { due, later } = this.due(lane, now);
    if (due.length === 0) {
      lane.leaseWaitSince = undefined;
      if (later !== undefined) this.schedule(lane, later - now);
      return;
    }
    // A run started while another holds the lease would sit in memory waiting for it: wait here instead.
    const holder = await blockingLease(this.o.sink, this.shard(lane), new Date(now));
    if (holder) {
      const bound = this.o.waitForLockSeconds * 1000;
      if (lane.leaseWaitSince === undefined) {
        lane.leaseWaitSince = now;
        this.log({
          event: 'run_waiting',
          level: 'info',
          holder: holder.run_id,
          waiting: due.length,
          wait_for_lock_seconds: this.o.waitForLockSeconds,
        });
      }
      const waited = now - lane.leaseWaitSince;
      if (waited < bound) return this.schedule(lane, Math.min(this.o.leasePollMs, bound - waited));
      lane.leaseWaitSince = undefined;
      const reason = `the destination's lease was held by run ${holder.run_id} for more than ${this.o.waitForLockSeconds} s`;
      this.log({ event: 'run_lock_timeout', level: 'warn', holder: holder.run_id, schools: Math.min(due.length, this.o.batchSize) });
      for (const w of due.slice(0, this.o.batchSize)) this.waiting.retryOrGiveUp(w, reason);
      await this.saver.save();
      lane.pumpAgain = true;
      return;
    }
    lane.leaseWaitSince = undefined;
    const batch = await this.withoutRevoked(due.slice(0, this.o.batchSize));
    if (this.stopping) return; // closed while the directives were read: the schools stay queued
    if (batch.length) this.start(lane, batch);
    else lane.pumpAgain = true;
  }

  /** Schools revoked since they were queued (a nightly run's reconciliation writes directives too) leave here. */
  private async withoutRevoked(batch: QueuedSchool[]): Promise<QueuedSchool[]> {
    const limit = pLimit(16);
    const directives = await Promise.all(batch.map((w) => limit(() => readDirective(this.o.sink, w.school_id))));
    const keep: QueuedSchool[] = [];
    let dropped = false;
    batch.forEach((w, i) => {
      if (!this.waiting.holds(w)) return; // dropped or re-approved meanwhile
      const off = directives[i]?.deactivated;
      if (!off) return keep.push(w);
      this.waiting.remove(w.school_id);
      dropped = true;
      logOutcome(this.o.log, w.school_id, 'info', `dropped from the queue: access ${off.event}: ${off.reason}`);
    });
    if (dropped) await this.saver.save();
    return keep;
  }

  // --- runs -----------------------------------------------------------------------------------

  private start(lane: Lane, entries: QueuedSchool[]): void {
    for (const w of entries) this.waiting.remove(w.school_id);
    const schools = entries.map((w) => w.school_id);
    let resolveEnded!: () => void;
    const running: Running = { entries, startedAt: this.iso(), ended: new Promise((r) => (resolveEnded = r)) };
    lane.running = running;
    let done: Promise<RunOutcome>;
    try {
      running.child = this.o.runner({ schools, shard: this.shard(lane), waitForLockSeconds: this.o.waitForLockSeconds });
      done = running.child.done;
    } catch (e) {
      done = Promise.resolve({ code: null, signal: null, error: `the run could not start: ${oneLine(e)}` });
    }
    this.log({
      event: 'run_started',
      level: 'info',
      schools: schools.length,
      school_ids: schools,
      shard: `${lane.index}/${this.lanes.length}`,
      ...(running.child?.pid !== undefined ? { pid: running.child.pid } : {}),
      retries: entries.filter((w) => w.attempts > 0).length,
    });
    if (this.o.runTimeoutSeconds > 0) {
      running.timeout = this.timers.setTimeout(() => {
        running.timedOut = true;
        this.log({ event: 'run_timeout', level: 'warn', seconds: this.o.runTimeoutSeconds, schools: schools.length });
        running.child?.stop();
      }, this.o.runTimeoutSeconds * 1000);
    }
    const saved = this.saver.save();
    void done
      .catch((e: unknown): RunOutcome => ({ code: null, signal: null, error: `the run failed: ${oneLine(e)}` }))
      .then(async (outcome) => {
        await saved;
        await this.finish(lane, running, outcome);
      })
      .catch((e: unknown) => this.log({ event: 'queue_failed', level: 'error', error: oneLine(e) }))
      .finally(() => {
        if (lane.running === running) lane.running = undefined;
        resolveEnded();
        if (!this.stopping) this.pump(lane);
        this.checkIdle();
      });
  }

  private async finish(lane: Lane, running: Running, outcome: RunOutcome): Promise<void> {
    if (running.timeout !== undefined) this.timers.clearTimeout(running.timeout);
    const schools = running.entries.map((w) => w.school_id);
    let results: Map<string, SchoolResult>;
    try {
      results = await schoolResults(this.o.sink, schools, outcome);
    } catch (e) {
      const reason = `its manifest could not be read (${oneLine(e)})`;
      results = new Map(schools.map((id) => [id, { kind: 'retry', reason }]));
    }
    const count = (k: SchoolResult['kind']) => [...results.values()].filter((r) => r.kind === k).length;
    this.log({
      event: 'run_exit',
      ...(outcome.code === 0 && !outcome.signal ? {} : { level: 'warn' }),
      code: outcome.code,
      signal: outcome.signal,
      ...(outcome.runId ? { run_id: outcome.runId } : {}),
      ...(outcome.error ? { error: outcome.error } : {}),
      schools: schools.length,
      exported: count('exported'),
      retry: count('retry'),
      deferred: count('deferred'),
      dropped: count('dropped'),
    });
    const runId = outcome.runId ? { run_id: outcome.runId } : {};
    for (const w of running.entries) {
      const r = results.get(w.school_id)!;
      if (r.kind === 'exported') logOutcome(this.o.log, w.school_id, 'info', 'exported', runId);
      else if (r.kind === 'dropped') logOutcome(this.o.log, w.school_id, 'info', `dropped: ${r.reason}`, runId);
      else if (r.kind === 'deferred') logOutcome(this.o.log, w.school_id, 'warn', `deferred to the next run: ${r.reason}`, runId);
      else if (this.stopping && !running.timedOut)
        this.waiting.requeue(w); // stopped by us, not by its own failure
      else
        this.waiting.retryOrGiveUp(
          w,
          running.timedOut ? `the run was stopped after ${this.o.runTimeoutSeconds} s (${r.reason})` : r.reason,
        );
    }
    lane.running = undefined;
    await this.saver.save();
  }

  // --- idleness ---------------------------------------------------------------------------------

  private checkIdle(): void {
    if (this.idleWaiters.length === 0) return;
    const now = this.timers.now();
    const busy = this.lanes.some(
      (l) => l.running !== undefined || l.pumping !== undefined || (!this.stopping && this.due(l, now).due.length > 0),
    );
    if (busy) return;
    for (const w of this.idleWaiters.splice(0)) w();
  }
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
