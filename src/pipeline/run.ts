import { createEncoding, defaultWorkers, type Encoding } from '../encode/pool.ts';
import { ConfigError, ExportError, asExportError } from '../errors.ts';
import { formatByName } from '../format/index.ts';
import { Committer } from '../manifest/committer.ts';
import { runEach } from './dispatch.ts';
import { StateBook } from '../manifest/state-book.ts';
import { shardOf } from './shard.ts';
import { DigestedStates, pruneDigests, StateDigestWriter } from '../manifest/state-digest.ts';
import { listStates } from '../manifest/state-store.ts';
import { acquireLease, type Lease } from '../manifest/lease.ts';
import { newRunId } from '../manifest/run-id.ts';
import type { Manifest, ManifestTask } from '../manifest/types.ts';
import { taskEntry } from '../manifest/layout.ts';
import { openSink } from '../sink/index.ts';
import { Housekeeping } from '../sink/housekeeping.ts';
import type { Sink } from '../sink/types.ts';
import { ApiClient } from '../source/client.ts';
import type { Clock } from '../source/retry.ts';
import type { RunConfig } from '../config/resolve.ts';
import { CheckpointPolicy } from './checkpoints.ts';
import { markRunEnded, markRunStarted, recordWalkOnceCommitted, sweepLeftovers, type SweepResult } from './leftovers.ts';
import { heldSchools, holdsUnapproved, reconcileRevocations } from './reconcile.ts';
import { selectResources } from '../resources/index.ts';
import { planRun, type RunPlan } from './run-plan.ts';
import { createReporter, tallied, type Reporter } from './progress.ts';
import { summarise, type RunSummary } from './summary.ts';
import { warnOverLimit } from './loader-warnings.ts';
import { admitPiece, commitPiece } from './task-commit.ts';
import { runTask, type TaskEnv, type TaskPlan } from './task.ts';
import { createPersonalData, type PersonalData } from '../privacy/personal-data.ts';
import { checkBeforeWriting, destinationGuard, finishPersonalData, type RunPrivacy, startPersonalData } from './run-privacy.ts';

export interface RunDeps {
  /** The access token (the command line resolves it from --token-file or SCHOOL_API_TOKEN). */
  token: string;
  reporter?: Reporter;
  /** Aborted on SIGINT/SIGTERM: tasks stop at the next page, nothing half-written is committed. */
  signal?: AbortSignal;
  now?: () => Date;
  /** Monotonic milliseconds, for checkpoint intervals and durations (tests count pages instead). */
  clock?: () => number;
  /** Time for the API client's retry waits (tests pass one that does not wait). */
  retryClock?: Clock;
  /** Where pages' CPU work runs (default: from --workers); tests pass a pool whose threads start at once. Closed by the run. */
  encoding?: Encoding;
  /** Tests: the destination as the run sees it, to observe or hold its writes at a known point. */
  wrapSink?: (sink: Sink) => Sink;
  /** Called once, when a task first reads a large page (TaskEnv.onLargePage). */
  onLargePage?: () => void;
}

/** What a run holds open: the API client, the destination and where events go. */
interface RunIo {
  client: ApiClient;
  sink: Sink;
  reporter: Reporter;
  /** Where pages' CPU work runs (worker threads, or this thread with --workers 0). */
  encoding: Encoding;
  /** Sweeps skipped or failed: said in the summary's notes. */
  housekeeping?: Housekeeping;
}

/** One run's identity and bookkeeping, shared by its tasks. */
interface RunContext {
  runId: string;
  startedAt: Date;
  extractedAt: string;
  committer: Committer;
  nextSeq: (dir: string) => number;
  clock: () => number;
  began: number;
  requests: { count: number };
  signal?: AbortSignal;
  /** Schools that answered 423 after the retry budget in this run: their remaining tasks are skipped. */
  inactive: Map<string, ExportError>;
  /** The personal-data policy every task applies (compiled per table once per run). */
  personalData: PersonalData;
  /** The destination's policy and format as this run keeps them, and the purge of what a tightening replaced. */
  privacy: RunPrivacy;
  /** The schools' state and directives, batched per school while it has tasks in flight. */
  states: StateBook;
  /** Where each school's final state goes for `status` (stores with version tags only). */
  digest: StateDigestWriter | undefined;
  /** The states the runs' digests hold at their current version (stores with version tags only). */
  copies?: DigestedStates | undefined;
  /** RunDeps.onLargePage, called at most once. */
  largePage: () => void;
}

/**
 * One run: discover schools, plan school × resource tasks, run them with bounded concurrency,
 * commit each task's state after its files are durable and listed, write the run manifest last.
 * A failing task never stops the others and never advances its state.
 */
export async function runExport(cfg: RunConfig, deps: RunDeps): Promise<RunSummary> {
  if (cfg.source.kind !== 'api')
    throw new ConfigError('the sandbox source is started by the command line (school-export run); pass an API source here');
  selectResources(cfg.resources, cfg.customResources); // a bad name stops the run before any request or write
  const reporter = tallied(deps.reporter ?? createReporter(cfg.progress, { level: cfg.logLevel }));
  const requests = { count: 0 };
  const startedAt = (deps.now ?? (() => new Date()))();
  const runId = newRunId(startedAt, cfg.shard);
  let client: ApiClient | undefined;
  let sink: Sink | undefined;
  const encoding = deps.encoding ?? createEncoding({ workers: cfg.workers ?? defaultWorkers(formatByName(cfg.format).workersToGain) });
  let lease: Lease | undefined;
  // Sweeps the store refuses (or that fail) are one warning each, never the run's failure.
  const housekeeping = new Housekeeping((w) =>
    reporter.emit({ event: 'housekeeping_skipped', operation: w.operation ?? w.what, permission: w.permission, message: w.message }),
  );
  try {
    // the destination's policy and format, checked before anything is written (even the probe of
    // a new destination) or requested ...
    await checkBeforeWriting(cfg, runId, startedAt);
    sink = await openSink(cfg.dest, { s3: { ...cfg.s3 }, owner: runId, housekeeping });
    if (deps.wrapSink) sink = deps.wrapSink(sink);
    lease = await acquireLease(sink, {
      runId,
      shard: cfg.shard,
      waitSeconds: cfg.waitForLockSeconds,
      ...(deps.signal ? { signal: deps.signal } : {}),
      onWait: (holder) => reporter.emit({ event: 'lease_wait', holder }),
      lock: cfg.lock,
      housekeeping,
    });
    // ... and again under the lease: the run it waited for may have changed them
    const guard = await destinationGuard(cfg, sink, runId, startedAt);
    await markRunStarted(sink, runId);
    const swept = sink;
    let sweep: SweepResult = {};
    await housekeeping.bestEffort('removing what killed runs left behind', async () => (sweep = await sweepLeftovers(swept)));
    client = new ApiClient({
      apiUrl: cfg.source.apiUrl,
      token: deps.token,
      auth: cfg.source.auth,
      domains: cfg.source.domains,
      connectionsPerDomain: cfg.connectionsPerDomain,
      retry: cfg.retry,
      ...(deps.retryClock ? { clock: deps.retryClock } : {}),
      ...(deps.signal ? { signal: deps.signal } : {}),
      onEvent: (e) => {
        if (e.type === 'request') requests.count += 1;
        else reporter.emit({ event: 'retry', url: e.url, attempt: e.attempt, delay_ms: e.delayMs, reason: e.reason });
      },
    });
    const summary = await execute(cfg, { client, sink, reporter, encoding, housekeeping }, { ...deps, runId, startedAt, guard }, requests);
    await housekeeping.bestEffort('recording the sweep of leftovers', () => recordWalkOnceCommitted(swept, sweep));
    return summary;
  } finally {
    reporter.close();
    await encoding.close();
    await client?.close();
    if (lease && sink) await markRunEnded(sink, runId).catch(() => undefined);
    await lease?.release().catch(() => undefined);
    await sink?.close();
  }
}

type StartedDeps = RunDeps & {
  runId: string;
  startedAt: Date;
  guard: Awaited<ReturnType<typeof destinationGuard>>;
  digest?: StateDigestWriter | undefined;
};

async function execute(cfg: RunConfig, io: RunIo, deps: StartedDeps, requests: { count: number }): Promise<RunSummary> {
  let digest: StateDigestWriter | undefined;
  await io.housekeeping?.bestEffort(DIGEST_STEP, async () => (digest = await StateDigestWriter.open(io.sink, deps.runId)));
  try {
    return await executeRun(cfg, io, { ...deps, digest }, requests);
  } finally {
    await digest?.abort().catch(() => undefined); // a no-op once committed
  }
}

async function executeRun(cfg: RunConfig, io: RunIo, deps: StartedDeps, requests: { count: number }): Promise<RunSummary> {
  const run = startRun(cfg, io, deps, requests);
  // The schools this destination holds are listed while discovery pages; revocations are
  // reconciled only when one of them is no longer approved.
  const held = heldSchools(io.sink, cfg.shard);
  held.catch(() => undefined); // awaited by the reconciliation, which says when it fails
  run.copies = await stateCopies(cfg, io);
  const plan = await planRun(cfg, io, {
    now: run.startedAt,
    personalData: run.personalData.fingerprint,
    reconcile: (approved) => reconcile(cfg, io, run, held, approved),
    ...(run.copies ? { stateCopies: run.copies } : {}),
  });
  // recorded before any task can commit a file under this run's policy and format (after discovery:
  // a run stopped by a bad token leaves no record of a policy nothing was written under)
  await deps.guard.record();
  for (const t of plan.skipped) run.committer.record(t);
  void io.reporter.planned?.({
    sink: io.sink,
    runId: run.runId,
    tasks: plan.tasks.map((t) => ({ ...idsOf(t), mode: t.mode, watermark: t.previousWatermark })),
  });
  io.reporter.emit({
    event: 'run_start',
    run_id: run.runId,
    dest: io.sink.url,
    format: cfg.format,
    schools: plan.schools,
    tasks: plan.tasks.length,
  });
  // a school's state stays in memory from its first task's commit to its last task's end
  for (const t of plan.tasks) run.states.hold(t.school.id);
  // the plan's tasks are taken (and let go) as they start: plan.tasks is empty afterwards
  await runEach(
    plan.tasks,
    cfg.concurrency,
    (t, freeSlot) => runOne(cfg, io, run, t, freeSlot).finally(() => run.states.release(t.school.id)),
    cfg.concurrency * TASKS_BEGUN_PER_SLOT,
  );
  await writeDigest(io, run.digest);
  return finishRun(io, run, plan);
}

/**
 * Tasks that have handed their last piece to the committer give their slot to the next task
 * (runEach). Tasks begun and not ended, reading or waiting for their commit: at most this many a
 * slot (so at most 3 a slot wait while every slot reads). Measured on the
 * 2,000-school incremental night (--concurrency 16): manifest parts 1.27 -> 0.34 a school, state
 * writes 3.5 -> 2.7, fsyncs 11.8 -> 9.2 (docs/performance-log.md).
 */
const TASKS_BEGUN_PER_SLOT = 4;

const DIGEST_STEP = "writing the digest of the schools' states for status";

/**
 * On a store with version tags (S3), the states of this run's schools that the runs' digests hold
 * at their current version: planning and each school's first write take them from there instead
 * of a GetObject each. Any other state file is read as before, so a digest that cannot be read
 * only costs those reads (one warning).
 */
async function stateCopies(cfg: RunConfig, io: RunIo): Promise<DigestedStates | undefined> {
  if (!io.sink.listVersions) return undefined;
  const asked = cfg.schools?.length ? new Set(cfg.schools) : undefined;
  const ours = (id: string) => shardOf(id, cfg.shard.count) === cfg.shard.index && (!asked || asked.has(id));
  const what = "reading the digests of the schools' states";
  let copies: DigestedStates | undefined;
  await io.housekeeping?.bestEffort(what, async () => {
    const listed = (await listStates(io.sink)).filter((s) => ours(s.schoolId));
    copies = await DigestedStates.read(io.sink, listed, (problem) => io.housekeeping?.failed(what, new Error(problem)));
  });
  return copies;
}

/**
 * The digest of the states this run wrote (src/manifest/state-digest.ts): what lets `status` read
 * thousands of schools' states from S3 in a few requests. Without it `status` reads each file, so
 * its failure is a warning, never the run's.
 */
async function writeDigest(io: RunIo, digest: StateDigestWriter | undefined): Promise<void> {
  if (!digest) return;
  await io.housekeeping?.bestEffort(DIGEST_STEP, async () => {
    try {
      await digest.commit();
    } catch (e) {
      await digest.abort().catch(() => undefined);
      throw e;
    }
    await pruneDigests(io.sink);
  });
}

function startRun(cfg: RunConfig, io: RunIo, deps: StartedDeps, requests: { count: number }): RunContext {
  const { runId, startedAt } = deps;
  const seqs = new Map<string, number>();
  const clock = deps.clock ?? (() => performance.now());
  const personalData = createPersonalData(cfg.personalData.policy, cfg.personalData.key);
  const privacy = startPersonalData(cfg, io.sink, { runId, personalData, guard: deps.guard.result });
  const header: ConstructorParameters<typeof Committer>[1] = {
    version: 1,
    run_id: runId,
    started_at: startedAt.toISOString(),
    format: cfg.format,
    format_options: { ...cfg.formatOptions },
    ...(cfg.shard.count > 1 ? { shard: cfg.shard } : {}),
    personal_data: privacy.manifestRecord,
    ...(deps.guard.result.formatChange ? { format_change: deps.guard.result.formatChange } : {}),
  };
  privacy.header = header;
  const run: RunContext = {
    runId,
    startedAt,
    extractedAt: startedAt.toISOString().replace('Z', '000Z'),
    committer: new Committer(io.sink, header),
    nextSeq: (dir) => {
      const n = (seqs.get(dir) ?? 0) + 1;
      seqs.set(dir, n);
      return n;
    },
    clock,
    began: clock(),
    requests,
    signal: deps.signal,
    inactive: new Map(),
    personalData,
    privacy,
    // the copies are read after the run starts (planRun): looked up when a school is first written
    states: new StateBook(io.sink, { onSettled: (w) => deps.digest?.add(w), copies: () => run.copies }),
    digest: deps.digest,
    largePage: once(() => deps.onLargePage?.()),
  };
  return run;
}

/**
 * Schools that revoked or declined access while no receiver was listening (best effort: a note if
 * the lists cannot be read). Only asked when a school held here is missing from /schools: a
 * school that revoked or declined is no longer listed there, so while all are, there is nothing
 * to reconcile and the run saves the two list requests.
 */
async function reconcile(
  cfg: RunConfig,
  io: RunIo,
  run: RunContext,
  held: Promise<string[]>,
  approved: ReadonlySet<string>,
): Promise<string[]> {
  try {
    if (!(await holdsUnapproved(io.sink, await held, approved))) return [];
    return await reconcileRevocations(io.client, io.sink, {
      runId: run.runId,
      purge: cfg.purgeOnRevoke,
      shard: cfg.shard,
      now: run.startedAt,
    });
  } catch (e) {
    return [`revoked and declined schools were not checked (${asExportError(e, 'E_PROTOCOL').message})`];
  }
}

/** Runs one task and records how it ended; never throws (one task's failure is not the run's). */
async function runOne(cfg: RunConfig, io: RunIo, run: RunContext, plan: TaskPlan, freeSlot: () => void): Promise<void> {
  const { school, spec } = plan;
  const ids = { school_id: school.id, resource: spec.name };
  if (run.signal?.aborted) {
    run.committer.record(endedTask(plan, 'not_started', new ExportError('E_ABORTED', 'the run was interrupted before this task began')));
    return;
  }
  const inactive = run.inactive.get(school.id);
  if (inactive) {
    run.committer.record(endedTask(plan, 'skipped', inactive));
    return;
  }
  const t0 = run.clock();
  io.reporter.emit({ event: 'task_start', ...ids, mode: plan.mode, reason: plan.reason });
  try {
    const result = await runTask(plan, taskEnv(cfg, io, run, plan, freeSlot));
    io.reporter.emit({
      event: 'task_done',
      ...ids,
      rows: result.rows,
      files: result.files,
      resumed: result.resumed,
      ...(result.unchanged ? { unchanged: true } : {}),
      ms: Math.round(run.clock() - t0),
    });
  } catch (e) {
    let err = classifyTaskError(e, run.signal, { school: school.id, resource: spec.name });
    if (err.status === 423 && err.code === 'E_HTTP_RETRIES') err = markInactive(run, io.reporter, school.id, err);
    const status = err.code === 'E_ABORTED' ? 'interrupted' : SKIPPED_CODES.has(err.code) ? 'skipped' : 'failed';
    io.reporter.emit({ event: `task_${status}`, ...ids, code: err.code, message: err.message });
    // A task whose files were listed but whose state did not advance is in the manifest already.
    if (!(e as { listed?: boolean }).listed) run.committer.record(endedTask(plan, status, err));
  }
}

/** One line for the school; its tasks not yet started are skipped without a request. */
function markInactive(run: RunContext, reporter: Reporter, schoolId: string, cause: ExportError): ExportError {
  const known = run.inactive.get(schoolId);
  if (known) return known;
  const message = `school ${schoolId} is inactive (423 school_inactive after the retry budget): its tasks were skipped; the next run tries again`;
  const err = new ExportError('E_SCHOOL_INACTIVE', message, { school: schoolId, status: 423, cause });
  run.inactive.set(schoolId, err);
  reporter.emit({ event: 'school_skipped', school_id: schoolId, code: 'E_SCHOOL_INACTIVE', reason: message });
  return err;
}

/** Tasks that ended for a reason of the school's, not their own: skipped, not failed. */
const SKIPPED_CODES: ReadonlySet<string> = new Set(['E_PURGED', 'E_SCHOOL_INACTIVE']);

function taskEnv(cfg: RunConfig, io: RunIo, run: RunContext, plan: TaskPlan, freeSlot: () => void): TaskEnv {
  const ids = { school_id: plan.school.id, resource: plan.spec.name };
  return {
    client: io.client,
    sink: io.sink,
    encoding: io.encoding,
    format: formatByName(cfg.format),
    formatOptions: cfg.formatOptions,
    runId: run.runId,
    extractedAt: run.extractedAt,
    perPage: cfg.perPage,
    lookbackSeconds: cfg.lookbackSeconds,
    limits: { maxRows: cfg.maxFileRows, maxBytes: cfg.maxFileBytes },
    nextSeq: run.nextSeq,
    checkpoints: new CheckpointPolicy(cfg.checkpointPages, cfg.checkpointSeconds * 1000, run.clock),
    admit: () => admitPiece({ sink: io.sink, school: plan.school, resource: plan.spec.name, states: run.states }),
    commit: async (piece) => {
      const committed = commitPiece(
        { sink: io.sink, committer: run.committer, school: plan.school, resource: plan.spec.name, states: run.states },
        run.privacy.tightening.watch(plan.school, piece),
      );
      // the task's last piece is queued: nothing left of it asks the API
      if (isLastPiece(piece.task)) freeSlot();
      await committed;
      io.reporter.emit({ event: 'task_committed', ...ids, rows_written: rowsOf(piece.task), files: piece.task.files.length });
    },
    onProgress: (p) => io.reporter.emit({ event: 'task_progress', ...ids, ...p }),
    onLargePage: run.largePage,
    onEvent: (e) => io.reporter.emit({ ...e, ...ids }),
    onOverLimit: (w) => warnOverLimit(run, io.reporter, ids, w),
    signal: run.signal,
    personalData: run.personalData,
  };
}

function once(f: () => void): () => void {
  let called = false;
  return () => {
    if (called) return;
    called = true;
    f();
  };
}

const idsOf = (plan: TaskPlan) => ({ school_id: plan.school.id, resource: plan.spec.name });
const isLastPiece = (t: ManifestTask) => t.checkpoint === undefined || t.checkpoint.final;
const rowsOf = (t: ManifestTask) => Object.values(t.rows).reduce((a, b) => a + b, 0);

/** An interrupt is E_ABORTED whatever the stream or socket made of it. */
function classifyTaskError(e: unknown, signal: AbortSignal | undefined, ctx: { school: string; resource: string }): ExportError {
  if (signal?.aborted && !(e instanceof ExportError && e.code === 'E_PURGED')) {
    return new ExportError(
      'E_ABORTED',
      'the run was interrupted while this task ran; nothing of it was committed after its last checkpoint',
      ctx,
    );
  }
  return asExportError(e, 'E_INTERNAL', ctx);
}

function endedTask(plan: TaskPlan, status: ManifestTask['status'], err: ExportError): ManifestTask {
  return taskEntry({
    school_id: plan.school.id,
    region: plan.school.region,
    resource: plan.spec.name,
    status,
    mode: plan.mode,
    files: [],
    rows: {},
    error: { code: err.code, message: err.message },
  });
}

async function finishRun(io: RunIo, run: RunContext, plan: RunPlan): Promise<RunSummary> {
  const interrupted = run.signal?.aborted === true;
  // the purge of files a tightening replaced, and each policy entry's columns for the manifest
  const pd = await finishPersonalData(run.privacy, run.committer, { interrupted });
  let manifest: Manifest;
  let manifestError: string | undefined;
  try {
    manifest = await run.committer.finish({ interrupted });
  } catch (e) {
    // The run still reports what it did; the manifest parts already list every committed task.
    manifestError = `the run manifest could not be written (${asExportError(e, 'E_SINK').message}); its committed tasks are listed in _manifests/${run.runId}/`;
    manifest = run.committer.snapshot({ interrupted });
  }
  const summary = summarise(manifest, {
    deactivated: plan.deactivated,
    scopeMasked: plan.scopeMasked,
    durationMs: run.clock() - run.began,
    dest: io.sink.url,
    requests: run.requests.count,
    tally: io.reporter.tally,
    notes: [
      ...plan.notes,
      ...pd.notes,
      ...(io.housekeeping?.warnings().map((w) => w.message) ?? []),
      ...(plan.nothingToDo ? [plan.nothingToDo] : []),
      ...(manifestError ? [manifestError] : []),
    ],
    failRun: manifestError !== undefined || plan.nothingToDo !== undefined || pd.failed,
    ...(await pd.summary(manifest)),
  });
  io.reporter.emit({ event: 'run_done', run_id: run.runId, status: summary.status, ms: Math.round(summary.durationMs) });
  return summary;
}
