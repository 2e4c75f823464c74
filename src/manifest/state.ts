/**
 * Pure rules for a school's committed state (like the Singer SDK's state helpers): what the next
 * run asks for, and what a finished task promotes. No I/O here; state-store.ts reads and writes.
 *
 * Watermarks. The spec does not say in which time zone the service reads updated_after, so we
 * send the watermark as a naive UTC time ("YYYY-MM-DD HH:MM:SS") minus a lookback. Read as UTC,
 * the window starts exactly `lookback` early; read as Europe/London (the service's home), the same
 * text names an instant up to one hour EARLIER, so the window only grows. Either way no change is
 * missed; the overlap produces duplicates that loaders resolve by (school, id, updated_at).
 *
 * The watermark itself is the server's clock when the task's first page was answered (its Date
 * header), never the largest updated_at seen: a cursor walk in id order can pass a row before it
 * changes, so only "everything changed before the walk began" is known to be complete. A read
 * resumed in a later run ends with an incremental catch-up from its first attempt's start, and
 * takes the catch-up's start: everything changed before that was read.
 */
import type { ResourceState, SchoolState } from './types.ts';

export function emptyState(schoolId: string, region: string): SchoolState {
  return { version: 1, school_id: schoolId, region, resources: {} };
}

export function updatedAfterParam(watermarkIso: string, lookbackSeconds: number): string {
  return naiveUtc(Date.parse(watermarkIso) - lookbackSeconds * 1000);
}

/** An instant as the API's updated_after/updated_before take it: naive UTC, to the second. */
export function naiveUtc(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19).replace('T', ' ');
}

/** The new watermark: the task's start on the server's clock, never moving backwards. */
export function nextWatermark(previous: string | null | undefined, taskStart: Date): string {
  const start = secondText(Math.floor(taskStart.getTime() / 1000) * 1000);
  if (previous && Date.parse(previous) > Date.parse(start)) return previous;
  return start;
}

/**
 * The last second's ISO text, reused: the tasks that start within one second share one string (a
 * run keeps every task's manifest entry until it ends, 100,000 of them at 10,000 schools).
 */
let lastSecond = { ms: NaN, text: '' };
function secondText(ms: number): string {
  if (ms !== lastSecond.ms) lastSecond = { ms, text: new Date(ms).toISOString() };
  return lastSecond.text;
}

/**
 * Tables without deletion records get a full snapshot when the last one is this old. 0 means
 * never (documented): deletions in such a table then stay in the warehouse until a full refresh.
 */
export function snapshotDue(lastFullAt: string | null | undefined, everyHours: number, now: Date): boolean {
  if (!lastFullAt) return true;
  if (everyHours <= 0) return false;
  return now.getTime() - Date.parse(lastFullAt) >= everyHours * 3600_000;
}

/** What a committed (final) task promotes into its resource's state. */
export interface CommittedRead {
  runId: string;
  mode: 'full' | 'incremental';
  /** Server time at the start of the read (of its catch-up, when it was resumed in a later run). */
  taskStart: Date;
  /** nextWatermark(the watermark the plan started from, taskStart): also written in the manifest. */
  watermark: string;
  /** Id list written for the next snapshot comparison, if any. */
  snapshotIdsFile?: string;
  /** The directive generation this read satisfies (migrations, approvals), if any. */
  forceFullSeq?: number;
  /** "table.column" values that were null for lack of scope. */
  scopeMasked: string[];
  /** Fingerprint of the personal-data policy the rows were written with ('keep' or absent: as read). */
  personalData?: string;
  /**
   * The content the resource holds now (ResourceState.content): a full read in one piece sets it
   * (its own, or the one it found unchanged), null drops it (the content changed otherwise: an
   * incremental read wrote rows, a read in pieces), undefined keeps it (nothing was written).
   */
  content?: ResourceState['content'] | null;
}

export function promoteResource(prev: ResourceState | undefined, read: CommittedRead): ResourceState {
  const next: ResourceState = {
    watermark: read.watermark,
    last_run_id: read.runId,
    last_full_at: read.mode === 'full' ? read.taskStart.toISOString() : (prev?.last_full_at ?? null),
  };
  const ids = read.snapshotIdsFile ?? prev?.known_ids_file;
  if (ids) next.known_ids_file = ids;
  const seq = read.forceFullSeq ?? prev?.applied_force_full_seq;
  if (seq !== undefined) next.applied_force_full_seq = seq;
  if (read.scopeMasked.length) next.scope_masked = [...read.scopeMasked].sort();
  if (read.personalData && read.personalData !== 'keep') next.personal_data = read.personalData;
  const content = read.content === undefined ? prev?.content : read.content;
  if (content) next.content = content;
  return next;
}

const NOTHING_YET: ResourceState = { watermark: null, last_run_id: null, last_full_at: null };

/**
 * A checkpoint keeps the committed watermark as it was and records where the read stands. Its
 * piece is loaded at once, so the content is no longer the one last hashed.
 */
export function checkpointResource(prev: ResourceState | undefined, checkpoint: NonNullable<ResourceState['checkpoint']>): ResourceState {
  const { content: _changed, ...rest } = prev ?? NOTHING_YET;
  return { ...NOTHING_YET, ...rest, checkpoint };
}

/** Deletion records from the API named rows of this resource: its content changed behind the hash. */
export function contentChanged(prev: ResourceState): ResourceState {
  const { content: _changed, ...rest } = prev;
  return rest;
}

/** A read that must start again from page 1 (its cursor was refused, or a migration changed ids). */
export function dropCheckpoint(prev: ResourceState): ResourceState {
  const { checkpoint: _dropped, ...rest } = prev;
  return rest;
}
