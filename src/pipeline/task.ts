import type { PageDecoder } from '../decode/index.ts';
import { canEncode } from '../encode/page-encoder.ts';
import type { PageResult } from '../encode/page-work.ts';
import { SMALL_PAGE_BYTES, type Encoding, type TaskEncoding } from '../encode/pool.ts';
import { encodingDecoder } from '../encode/task-decoder.ts';
import type { Format, FormatOptions } from '../format/types.ts';
import { checkpointResource, naiveUtc, nextWatermark, promoteResource, updatedAfterParam } from '../manifest/state.ts';
import type { Manifest, ManifestTask, ResourceState } from '../manifest/types.ts';
import { taskEntry } from '../manifest/layout.ts';
import type { ResourceSpec } from '../resources/types.ts';
import { tableSchemas } from '../resources/schema.ts';
import type { ApiClient } from '../source/client.ts';
import { rowKeyOf } from '../source/row-key.ts';
import type { Sink } from '../sink/types.ts';
import { CheckpointPolicy } from './checkpoints.ts';
import type { OverLimit } from '../decode/index.ts';
import { ContentHash } from './content-hash.ts';
import { meta } from '../flatten/index.ts';
import { finishSnapshot, writeKeyChunk } from './snapshot-deletions.ts';
import { TaskOutput, type CommittedPiece, type SchoolRef } from './task-output.ts';
import { openResponse, type KeptResponse } from './school-probe.ts';
import type { PersonalData } from '../privacy/personal-data.ts';
import { CursorRefused, runWalks, type Walk } from './walks.ts';
import { planWindows, readsInWindows, WindowDedupe } from './windows.ts';

export type { SchoolRef };

export interface TaskPlan {
  school: SchoolRef;
  spec: ResourceSpec;
  mode: 'full' | 'incremental';
  /** What is sent as updated_after (naive UTC), for incremental reads. */
  updatedAfter?: string;
  /** The previous snapshot's id list (tables without deletion records). */
  knownIdsFile?: string;
  /** A read committed up to a checkpoint by an earlier run: resume it. */
  resume?: NonNullable<ResourceState['checkpoint']>;
  /** The directive generation a full read satisfies (approvals, migrations). */
  forceFullSeq?: number;
  /** "table.column" values null for lack of scope at this school. */
  scopeMasked: string[];
  /** "table.column" values guarded by a property scope (masked or not): the manifest's scope_guarded. */
  scopeGuarded?: string[];
  /** The committed watermark the new one may not fall behind (null: forced or --full-refresh start afresh). */
  previousWatermark: string | null;
  /** Why the plan chose this mode (shown by --dry-run and progress). */
  reason: string;
  /** Id lists of a checkpointed read the plan chose not to resume: removed once this read commits. */
  abandonedIds?: string[];
  /** Windows a full read of a big school is split into (1: one cursor walk). */
  windows: number;
  /** The response the plan's probe already read (school_permissions): not requested again. */
  prefetched?: KeptResponse;
  /**
   * The content last committed (state), which a full read equal to it does not write again.
   * Absent with --full-refresh, which writes everything (the way to rewrite lost files).
   */
  lastContent?: { sha256: string; run_id: string };
}

/** Handed to the run's committer: list the piece in a manifest part, then advance the state. */
export interface PieceCommit {
  task: ManifestTask;
  deletions: Manifest['deletions'];
  state: (prev: ResourceState | undefined) => ResourceState;
  /** Files no longer referenced once the state has advanced (superseded id lists). */
  obsolete: string[];
  /** Other resources of the school whose rows deletion records of this piece named: their content hash goes. */
  invalidates?: string[];
}

export type TaskEvent =
  | { event: 'checkpoint'; seq: number; pages: number; rows: number }
  | { event: 'resumed'; seq: number; pages: number; rows: number }
  | { event: 'resume_refused'; reason: string }
  | { event: 'snapshot_incomplete'; reason: string };

export interface TaskEnv {
  client: ApiClient;
  sink: Sink;
  /** Pages' CPU work (gunzip, parse, encode) off this thread; absent: rows flattened here. */
  encoding?: Encoding;
  /** Set by runTask when the task's pages take src/encode: the paginator's decoder. */
  decode?: PageDecoder;
  /** Set alongside `decode`: the same encoding for rows parsed on this thread (windowed reads). */
  encodeRows?: (rows: readonly unknown[]) => PageResult;
  format: Format;
  formatOptions: FormatOptions;
  runId: string;
  extractedAt: string;
  perPage: number;
  lookbackSeconds: number;
  limits: { maxRows: number; maxBytes: number };
  nextSeq: (dir: string) => number;
  checkpoints: CheckpointPolicy;
  /** Throws when the school may no longer be committed (access revoked meanwhile). */
  admit: () => Promise<void>;
  commit: (piece: PieceCommit) => Promise<void>;
  onProgress?: (p: { rows: number; pages: number; bytes: number }) => void;
  /**
   * A page of LARGE_BODY_BYTES as received (LARGE_PAGE_BYTES of JSON) arrived, told before it is
   * parsed where it can be: the command line bounds the heap for large reads from then on (the
   * format's young generation, a tighter heap growth: src/cli/heap.ts).
   */
  onLargePage?: () => void;
  onEvent?: (e: TaskEvent) => void;
  signal?: AbortSignal;
  /** The run's personal-data policy (docs/personal-data.md). */
  personalData?: PersonalData;
  /** A value too large for a documented loader was written (warned once per table per run). */
  onOverLimit?: (w: OverLimit) => void;
}

export interface TaskResult {
  rows: number;
  files: number;
  pieces: number;
  resumed: boolean;
  /** A full read whose content equalled the last committed one: nothing was written. */
  unchanged: boolean;
}

/** Where a read stands: the state a checkpoint saves and a resumed read starts from. */
interface ReadProgress {
  snapshot: string;
  seq: number;
  pages: number;
  rows: number;
  bytes: number;
  startedAt?: Date;
  idsFiles: string[];
  resumed: boolean;
  files: number;
  unchanged?: boolean;
}

/**
 * A page this large marks a run that reads real volumes, not a night of small tasks (whose
 * pages, a few rows each, are 1-3 KB of JSON and well under 1 KB gzipped): as received (gzip
 * or not; the size from which a page is worth a worker thread), and as JSON.
 */
const LARGE_BODY_BYTES = SMALL_PAGE_BYTES;
const LARGE_PAGE_BYTES = 64 * 1024;

function largeBody(env: TaskEnv, bytes: number): void {
  if (bytes >= LARGE_BODY_BYTES) env.onLargePage?.();
}

/**
 * Reads one resource of one school and commits its files: at the end, and for long paginated
 * reads also at checkpoints (every N pages or M seconds), so a killed run resumes where it was.
 */
export async function runTask(plan: TaskPlan, env: TaskEnv): Promise<TaskResult> {
  const collectKeys = plan.mode === 'full' && snapshotComparable(plan.spec);
  const content = hashesContent(plan) ? { content: contentHasher(plan, env), holdFirstPage: plan.lastContent !== undefined } : {};
  const out = new TaskOutput({ ...env, spec: plan.spec, school: plan.school, collectKeys, ...content });
  const progress = startProgress(plan, env);
  const encoding = openEncoding(plan, env, out, collectKeys);
  try {
    const localStart = new Date();
    const encoded = encoding && {
      decode: encodingDecoder(encoding, (bytes) => largeBody(env, bytes)),
      encodeRows: (rows: readonly unknown[]) => encoding.encodeRows(rows),
    };
    const serverStart = await readAll(plan, { ...env, ...encoded }, out, progress);
    progress.startedAt ??= serverStart ?? localStart;
    await commitFinal(plan, env, out, progress);
    const unchanged = progress.unchanged === true;
    return { rows: progress.rows, files: progress.files, pieces: progress.seq, resumed: progress.resumed, unchanged };
  } catch (e) {
    await out.abort();
    throw e;
  } finally {
    await encoding?.close().catch(() => undefined);
  }
}

/**
 * The task's page encoding (src/encode), when its pages can take that path: generated
 * serialisers, in worker threads unless --workers 0. Otherwise pages are flattened here.
 * A personal-data policy other than keep-all must keep the reference path (flatten -> policy -> writer).
 */
function openEncoding(plan: TaskPlan, env: TaskEnv, out: TaskOutput, collectKeys: boolean): TaskEncoding | undefined {
  const format = env.format.name;
  if (!env.encoding || !plan.spec.paginated || plan.spec.shape !== 'list' || !canEncode(plan.spec, format, env.formatOptions))
    return undefined;
  // the generated serialisers write values as they are: only when the policy keeps every column
  if (env.personalData && tableSchemas(plan.spec).some((t) => env.personalData!.transformFor(t) !== undefined)) return undefined;
  return env.encoding.openTask({
    spec: plan.spec,
    format,
    formatOptions: env.formatOptions,
    ctx: out.metaContext,
    ...(collectKeys ? { keyField: plan.spec.key[0]! } : {}),
  });
}

/**
 * Full reads that may turn out unchanged: read from page 1 in one cursor walk (a resumed read
 * holds rows of earlier runs; windows interleave pages in no fixed order). Whether it stays one
 * piece is known only at its end: a checkpoint drops the hash (TaskOutput.forgetContent).
 *
 * And only where a later full read can meet the same content again (hashRecorded): hashing costs
 * about a tenth of a read's CPU (SHA-256 of every row written, and the search for the per-run
 * values in each row), on the largest reads there are.
 */
function hashesContent(plan: TaskPlan): boolean {
  return plan.mode === 'full' && !plan.resume && !readsInWindows(plan) && hashRecorded(plan);
}

/**
 * Resources whose full reads record their content's hash: those read in full every run (no
 * updated_after), those read in full again when a snapshot is due (deletions found by comparing
 * snapshots), and any whose state holds a hash already. An incremental resource with deletion
 * records is read in full again only when a directive or a new personal-data policy forces it
 * (the policy is part of the hash, so that read never matches), and its first incremental read
 * that writes rows drops the hash: on its first full read (a school's largest read) the hash would
 * nearly always be computed for nothing. Such a forced read rewrites the table's files instead.
 */
function hashRecorded(plan: TaskPlan): boolean {
  return !plan.spec.incremental || snapshotComparable(plan.spec) || plan.lastContent !== undefined;
}

/** A fresh content hash for the read (content-hash.ts): under the run's format, options and policy. */
function contentHasher(plan: TaskPlan, env: TaskEnv): () => ContentHash {
  const perRun = meta({ schoolId: plan.school.id, region: plan.school.region, runId: env.runId, extractedAt: env.extractedAt });
  const under = { format: env.format.name, format_options: env.formatOptions, personal_data: env.personalData?.fingerprint ?? 'keep' };
  const values = { _run_id: String(perRun._run_id), _extracted_at: String(perRun._extracted_at) };
  return () => new ContentHash(under, values);
}

/** Full reads of school lists keyed by one id, in tables the service keeps no deletion records for. */
function snapshotComparable(spec: ResourceSpec): boolean {
  return spec.incremental && !spec.deletionType && spec.key.length === 1 && spec.scope === 'school';
}

function startProgress(plan: TaskPlan, env: TaskEnv): ReadProgress {
  const r = plan.resume;
  if (!r) return { snapshot: env.runId, seq: 0, pages: 0, rows: 0, bytes: 0, idsFiles: [], resumed: false, files: 0 };
  return {
    snapshot: r.snapshot,
    seq: r.seq,
    pages: r.pages,
    rows: r.rows,
    bytes: 0,
    startedAt: new Date(r.started_at),
    idsFiles: [...(r.ids_files ?? [])],
    resumed: true,
    files: 0,
  };
}

/** Reads every page (or the one object) and returns the server's clock at the first answer. */
async function readAll(plan: TaskPlan, env: TaskEnv, out: TaskOutput, progress: ReadProgress): Promise<Date | undefined> {
  const { spec, school } = plan;
  if (spec.scope === 'discovery') {
    await out.writeRecords([school.record]);
    progress.rows += 1;
    return env.client.serverNow();
  }
  const path = spec.path.replace('{school_id}', school.id);
  const query: Record<string, string | number | boolean | undefined> = { ...(spec.query ?? {}), updated_after: plan.updatedAfter };
  const ctx = { school: school.id, endpoint: spec.path };
  if (spec.shape === 'object' || !spec.paginated) {
    const prefetched = plan.prefetched;
    plan.prefetched = undefined; // parsed once, then let go while the task writes it
    const { body, serverDate } = (
      prefetched ? openResponse(prefetched) : await env.client.getJson(path, { domain: school.domain, query, ctx, token: school.token })
    ) as {
      body: { data?: unknown } | undefined;
      serverDate?: Date;
    };
    const data = body?.data;
    const records = spec.shape === 'object' ? [data] : Array.isArray(data) ? data : [];
    await out.writeRecords(records);
    progress.rows += records.length;
    progress.pages = 1;
    return serverDate;
  }
  return readPages(plan, env, out, progress, { path, query, ctx });
}

type ListRequest = {
  path: string;
  query: Record<string, string | number | boolean | undefined>;
  ctx: { school: string; endpoint: string };
};

/**
 * A paginated read: one cursor walk, or for a big school's full read (`--windows N`) one walk
 * per updated_at window after a first page that samples the school. A resumed read carries on
 * from its saved walks; a saved cursor the service refuses starts the read over from page 1.
 */
async function readPages(
  plan: TaskPlan,
  env: TaskEnv,
  out: TaskOutput,
  progress: ReadProgress,
  req: ListRequest,
): Promise<Date | undefined> {
  if (plan.resume) env.onEvent?.({ event: 'resumed', seq: progress.seq, pages: progress.pages, rows: progress.rows });
  try {
    if (!plan.resume) return await startRead(plan, env, out, progress, req);
    const serverStart = await walkAll(plan, env, out, progress, req, plan.resume.walks, plan.resume.boundaries);
    await catchUp(plan, env, out, progress, req);
    return serverStart;
  } catch (e) {
    if (!(e instanceof CursorRefused)) throw e;
    // The saved cursor expired or was invalidated: read again from page 1, as a new snapshot.
    // Rows other windows wrote meanwhile are not committed: the new read writes them again.
    env.onEvent?.({ event: 'resume_refused', reason: e.message });
    await out.restart();
    Object.assign(progress, {
      snapshot: env.runId,
      seq: 0,
      pages: 0,
      rows: 0,
      bytes: 0,
      startedAt: undefined,
      idsFiles: [],
      resumed: false,
    });
    return startRead(plan, env, out, progress, req);
  }
}

/**
 * A read resumed in a later run may have passed rows that changed since its first attempt began:
 * one incremental walk from then (minus the lookback) reads them, so the resumed task ends as
 * exact as an uninterrupted one, and the watermark moves to the catch-up's own start.
 */
async function catchUp(plan: TaskPlan, env: TaskEnv, out: TaskOutput, progress: ReadProgress, req: ListRequest): Promise<void> {
  if (!plan.spec.updatedAtField || !progress.startedAt) return;
  const after = updatedAfterParam(progress.startedAt.toISOString(), env.lookbackSeconds);
  const requested = new Date();
  const serverStart = await walkAll(plan, env, out, progress, req, [{ after }]);
  progress.startedAt = serverStart ?? requested;
}

async function startRead(
  plan: TaskPlan,
  env: TaskEnv,
  out: TaskOutput,
  progress: ReadProgress,
  req: ListRequest,
): Promise<Date | undefined> {
  if (!readsInWindows(plan)) return walkAll(plan, env, out, progress, req, [{}]);
  const field = plan.spec.updatedAtField;
  // The first page, as one request (no page fetched ahead): its rows are written and sample the school.
  const first = await env.client.getJson<{ data?: unknown; meta?: { pagination?: { next?: unknown; more?: unknown } } }>(req.path, {
    domain: plan.school.domain,
    token: plan.school.token,
    query: { ...req.query, ...listQuery(plan, env) },
    ctx: req.ctx,
  });
  const records = Array.isArray(first.body?.data) ? first.body.data : [];
  await writeParsed(env, out, progress, records);
  progress.pages += 1;
  const pagination = first.body?.meta?.pagination;
  if (pagination?.more === false || typeof pagination?.next !== 'string' || pagination.next === '') return first.serverDate;
  const until = first.serverDate ?? new Date();
  const { windows, boundaries } = await planWindows(records, { field, until, k: plan.windows }, (ms) =>
    anyUpdatedAfter(plan, env, req, ms),
  );
  const dedupe = new WindowDedupe(boundaries, field, plan.spec.key[0] ?? 'id');
  dedupe.remember(records);
  progress.startedAt ??= until;
  await walkAll(plan, env, out, progress, req, windows, boundaries, dedupe);
  return first.serverDate;
}

/** Rows parsed on this thread: through the task's generated encoder when it has one, else flattened. */
async function writeParsed(env: TaskEnv, out: TaskOutput, progress: ReadProgress, records: readonly unknown[]): Promise<void> {
  if (env.encodeRows) {
    const page = env.encodeRows(records);
    await out.writeEncoded(page);
    progress.rows += page.records;
    return;
  }
  await out.writeRecords(records);
  progress.rows += records.length;
}

/** One row at most, no includes: whether the school has any row updated after this instant. */
async function anyUpdatedAfter(plan: TaskPlan, env: TaskEnv, req: ListRequest, ms: number): Promise<boolean> {
  const probe = await env.client.getJson<{ data?: unknown }>(req.path, {
    domain: plan.school.domain,
    token: plan.school.token,
    query: { ...req.query, per_page: 1, updated_after: naiveUtc(ms) },
    ctx: req.ctx,
  });
  return Array.isArray(probe.body?.data) && probe.body.data.length > 0;
}

async function walkAll(
  plan: TaskPlan,
  env: TaskEnv,
  out: TaskOutput,
  progress: ReadProgress,
  req: ListRequest,
  walks: Walk[],
  boundaries?: number[],
  dedupe = boundaries?.length
    ? new WindowDedupe(boundaries, plan.spec.updatedAtField ?? 'updated_at', plan.spec.key[0] ?? 'id')
    : undefined,
): Promise<Date | undefined> {
  let serverStart: Date | undefined;
  const state = walks.map((w) => ({ ...w }));
  return runWalks(state, {
    pages: (w) =>
      env.client.paginate(req.path, {
        domain: plan.school.domain,
        token: plan.school.token,
        rowKey: rowKeyOf(plan.spec.key),
        query: { ...req.query, ...(w.after ? { updated_after: w.after } : {}), ...(w.before ? { updated_before: w.before } : {}) },
        mode: 'cursor',
        perPage: env.perPage,
        include: plan.spec.children?.map((c) => c.include),
        ctx: req.ctx,
        ...(w.next ? { from: w.next } : {}),
        // windows drop duplicate ids from rows here, so their pages are parsed here (writeParsed)
        ...(env.decode && !dedupe ? { decode: env.decode } : {}),
      }),
    write: async (records, encoded) => {
      if (encoded !== undefined) {
        // encoded by src/encode; its decoder set `encoded` to the page's PageResult
        const page = await (encoded as Promise<PageResult>);
        await out.writeEncoded(page);
        progress.rows += page.records;
        return;
      }
      await writeParsed(env, out, progress, records);
    },
    pageDone: (batch) => {
      serverStart ??= batch.serverDate;
      progress.pages += 1;
      progress.bytes += batch.bytes;
      if (batch.bytes >= LARGE_PAGE_BYTES) env.onLargePage?.(); // pages not parsed by src/encode (windows)
      env.onProgress?.({ rows: progress.rows, pages: progress.pages, bytes: progress.bytes });
    },
    checkpoint: async (current) => {
      progress.startedAt ??= serverStart ?? new Date();
      await commitCheckpoint(plan, env, out, progress, {
        walks: current.map((w) => ({ ...w })),
        ...(boundaries?.length ? { boundaries } : {}),
      });
    },
    timer: env.checkpoints.start(progress.pages),
    pagesRead: () => progress.pages,
    ...(dedupe ? { dedupe } : {}),
    ...(env.signal ? { signal: env.signal } : {}),
  });
}

/** The list query a page of this task carries (what paginate adds on its own). */
function listQuery(plan: TaskPlan, env: TaskEnv): Record<string, string | number | boolean> {
  const include = plan.spec.children?.map((c) => c.include) ?? [];
  return { per_page: env.perPage, cursor: true, ...(include.length ? { include: include.join(',') } : {}) };
}

function pieceTask(
  plan: TaskPlan,
  piece: CommittedPiece,
  progress: ReadProgress,
  final: boolean,
  drift: Record<string, string[]>,
): ManifestTask {
  const split = progress.seq > 0 || !final;
  return taskEntry({
    school_id: plan.school.id,
    region: plan.school.region,
    resource: plan.spec.name,
    status: 'committed',
    mode: plan.updatedAfter ? 'incremental' : 'full',
    updated_after: plan.updatedAfter,
    files: piece.files,
    rows: piece.rows,
    drift_fields: Object.keys(drift).length ? drift : undefined,
    replaced_surrogates: piece.replacedSurrogates,
    checkpoint: split ? { snapshot: progress.snapshot, seq: progress.seq + 1, final } : undefined,
    scope_masked: plan.scopeMasked.length ? byTable(plan.scopeMasked) : undefined,
    scope_guarded: plan.scopeGuarded?.length ? byTable(plan.scopeGuarded) : undefined,
  });
}

async function commitCheckpoint(
  plan: TaskPlan,
  env: TaskEnv,
  out: TaskOutput,
  progress: ReadProgress,
  cursor: { walks: Walk[]; boundaries?: number[] },
): Promise<void> {
  await env.admit(); // before anything of the piece is written under a final name
  out.forgetContent(); // the read is now in pieces, each loaded as it commits: never "unchanged"
  const piece = await out.commit();
  if (out.keys) {
    const chunk = await writeKeyChunk(env.sink, plan, progress.snapshot, progress.seq + 1, out.keys);
    out.keys.clear();
    progress.idsFiles.push(chunk);
  }
  const task = pieceTask(plan, piece, progress, false, out.drift());
  const checkpoint: NonNullable<ResourceState['checkpoint']> = {
    snapshot: progress.snapshot,
    seq: progress.seq + 1,
    ...cursor,
    pages: progress.pages,
    rows: progress.rows,
    started_at: progress.startedAt!.toISOString(),
    ...(plan.updatedAfter ? { updated_after: plan.updatedAfter } : {}),
    ...(progress.idsFiles.length ? { ids_files: [...progress.idsFiles] } : {}),
    // what the read began under: a resume is valid only while these still hold
    ...(plan.forceFullSeq !== undefined ? { force_full_seq: plan.forceFullSeq } : {}),
    ...(plan.scopeMasked.length ? { scope_masked: plan.scopeMasked } : {}),
    ...(env.personalData?.fingerprint ? { personal_data: env.personalData.fingerprint } : {}),
  };
  await env.commit({
    task,
    deletions: piece.deletions,
    state: (prev) => checkpointResource(prev, checkpoint),
    obsolete: [],
    invalidates: takeDeleted(out),
  });
  progress.seq += 1;
  progress.files += piece.files.length;
  env.onEvent?.({ event: 'checkpoint', seq: progress.seq, pages: progress.pages, rows: progress.rows });
}

async function commitFinal(plan: TaskPlan, env: TaskEnv, out: TaskOutput, progress: ReadProgress): Promise<void> {
  const sha = progress.seq === 0 ? out.contentDigest() : undefined;
  // Unchanged: no file is written, only the state, after which the directive is read anyway
  // (commitPiece). Not asking before saves a read a table: on S3 most of a quiet night's requests.
  if (sha !== undefined && isUnchanged(plan, sha)) return commitUnchanged(plan, env, out, progress, sha);
  await env.admit(); // before anything of the piece is written under a final name
  let snapshotIdsFile: string | undefined;
  // id lists of an earlier attempt this read no longer continues (refused cursor, dropped resume)
  const obsolete: string[] = [
    ...(plan.abandonedIds ?? []),
    ...(plan.resume?.ids_files ?? []).filter((f) => !progress.idsFiles.includes(f)),
  ];
  if (out.keys) {
    const snap = await finishSnapshot({
      sink: env.sink,
      plan,
      output: out,
      chunks: progress.idsFiles,
      detectedAt: progress.startedAt!,
      runId: env.runId,
    });
    snapshotIdsFile = snap.idsFile;
    if (snap.warning) env.onEvent?.({ event: 'snapshot_incomplete', reason: snap.warning });
    const superseded = snap.idsFile && plan.knownIdsFile && plan.knownIdsFile !== snap.idsFile ? [plan.knownIdsFile] : [];
    obsolete.push(...progress.idsFiles, ...superseded);
  }
  const piece = await out.commit();
  const watermark = nextWatermark(plan.previousWatermark, progress.startedAt!);
  const task = pieceTask(plan, piece, progress, true, out.drift());
  task.watermark = watermark;
  task.content_sha256 = sha;
  const read = {
    runId: env.runId,
    mode: task.mode,
    taskStart: progress.startedAt!,
    watermark,
    snapshotIdsFile,
    forceFullSeq: plan.forceFullSeq,
    scopeMasked: plan.scopeMasked,
    personalData: env.personalData?.fingerprint,
    content: contentAfter(task.mode, sha, progress.rows, env.runId),
  };
  await env.commit({
    task,
    deletions: piece.deletions,
    state: (prev) => promoteResource(prev, read),
    obsolete,
    invalidates: takeDeleted(out),
  });
  progress.seq += 1;
  progress.files += piece.files.length;
}

/**
 * The content equals the last committed version: same hash, and (tables whose deletions are
 * found by comparing snapshots) a previous id list to keep as the baseline, since none is written.
 */
function isUnchanged(plan: TaskPlan, sha: string): boolean {
  return plan.lastContent?.sha256 === sha && (!snapshotComparable(plan.spec) || plan.knownIdsFile !== undefined);
}

/**
 * A full read whose content is unchanged: its files are discarded before they are ever published,
 * and the manifest lists the task as `unchanged` (still a full snapshot as of `read_at`: nothing
 * was deleted; the files of `unchanged_since` hold its rows). State advances as for a committed
 * full read (watermark, last_full_at); the previous snapshot's id list stays the baseline.
 */
async function commitUnchanged(plan: TaskPlan, env: TaskEnv, out: TaskOutput, progress: ReadProgress, sha: string): Promise<void> {
  await out.abort();
  const since = plan.lastContent!;
  const watermark = nextWatermark(plan.previousWatermark, progress.startedAt!);
  const task = taskEntry({
    school_id: plan.school.id,
    region: plan.school.region,
    resource: plan.spec.name,
    status: 'unchanged',
    mode: 'full',
    files: [],
    rows: {},
    watermark,
    content_sha256: sha,
    read_at: progress.startedAt!.toISOString(),
    unchanged_since: since.run_id,
  });
  const read = {
    runId: env.runId,
    mode: 'full' as const,
    taskStart: progress.startedAt!,
    watermark,
    forceFullSeq: plan.forceFullSeq,
    scopeMasked: plan.scopeMasked,
    personalData: env.personalData?.fingerprint,
    content: since,
  };
  await env.commit({ task, deletions: [], state: (prev) => promoteResource(prev, read), obsolete: [...(plan.abandonedIds ?? [])] });
  progress.seq += 1;
  progress.unchanged = true;
}

/**
 * What the resource's content hash becomes (state.ts CommittedRead.content): a full read in one
 * piece sets its own; any other full read, or an incremental one that wrote rows, drops it.
 */
function contentAfter(
  mode: ManifestTask['mode'],
  sha: string | undefined,
  rows: number,
  runId: string,
): ResourceState['content'] | null | undefined {
  if (sha !== undefined) return { sha256: sha, run_id: runId };
  return mode === 'full' || rows > 0 ? null : undefined;
}

/** Tables the piece's deletion records (from the API) named; cleared for the next piece. */
function takeDeleted(out: TaskOutput): string[] {
  const tables = [...out.deletedTables];
  out.deletedTables.clear();
  return tables;
}

function byTable(columns: string[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const c of columns) {
    const dot = c.indexOf('.');
    (out[c.slice(0, dot)] ??= []).push(c.slice(dot + 1));
  }
  return out;
}
