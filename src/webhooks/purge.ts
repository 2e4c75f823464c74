import { redactDeletions } from '../manifest/layout.ts';
import { newRunId } from '../manifest/run-id.ts';
import type { Sink } from '../sink/types.ts';
import type { Manifest } from '../manifest/types.ts';
import { assertSafeId } from '../ids.ts';

/**
 * Removing a school's exported data when it revokes or declines access (children's personal
 * data: we keep nothing the school no longer lets us hold). Every path with a `school_id=<id>`
 * segment goes: every table's files `<table>/region=*\/school_id=<id>/...`, the state file
 * `_state/region=*\/school_id=<id>.json` and anything the pipeline keeps beside it (snapshot id
 * lists under `_state/ids/`), except the receiver's own records (directive, event log).
 * Run manifests stay (history: loaders read them in order, skip the school's earlier tasks and
 * the purge manifest tells them to drop its rows), but the deletion records they list for the
 * school are removed from them: those name its students, contacts and employees.
 */
const KEEP_PREFIXES = ['_state/_directives/', '_state/_webhooks/', '_manifests/'];

export interface PurgeResult {
  manifestPath: string;
  manifest: Manifest;
  removed: string[];
  /** Manifests (whole-run and parts) rewritten without the school's deletion records. */
  redacted: string[];
  /** Manifests that are not JSON, so could not be checked for the school's deletion records: report them. */
  unreadable: string[];
}

export function selectSchoolPaths(paths: string[], schoolId: string): { data: string[]; state: string[] } {
  assertSafeId(schoolId);
  const dirSeg = `school_id=${schoolId}`;
  const fileSeg = `${dirSeg}.json`;
  const data: string[] = [];
  const state: string[] = [];
  for (const p of paths) {
    if (KEEP_PREFIXES.some((k) => p.startsWith(k))) continue;
    const segs = p.split('/');
    if (!segs.some((s, i) => s === dirSeg || (s === fileSeg && i === segs.length - 1))) continue;
    (p.startsWith('_state/') ? state : data).push(p);
  }
  return { data, state };
}

export function regionOf(path: string): string {
  return /(?:^|\/)region=([^/]+)\//.exec(path)?.[1] ?? 'unknown';
}

/** Sorts with run ids (a purge orders against the runs around it), marked as a purge. */
export function purgeRunId(now: Date): string {
  return newRunId(now, undefined, 'purge');
}

export async function purgeSchool(sink: Sink, schoolId: string, reason: string, now = new Date()): Promise<PurgeResult> {
  const started = now.toISOString();
  const { data, state } = selectSchoolPaths(await sink.list(''), schoolId);
  // data first: a crash after this leaves the state, and the school is already deactivated, so
  // no run reads it; a redelivered event finishes the purge
  if (data.length) await sink.remove(data);
  if (state.length) await sink.remove(state);

  const byRegion = new Map<string, number>();
  for (const p of [...data, ...state]) byRegion.set(regionOf(p), (byRegion.get(regionOf(p)) ?? 0) + 1);
  if (byRegion.size === 0) byRegion.set('unknown', 0);

  const runId = purgeRunId(now);
  const manifest: Manifest = {
    version: 1,
    run_id: runId,
    started_at: started,
    finished_at: new Date().toISOString(),
    // required by the shape; a purge writes no data files, so the value describes nothing
    format: 'ndjson',
    status: 'ok',
    tasks: [],
    deletions: [],
    purged: [...byRegion].map(([region, files_removed]) => ({ school_id: schoolId, region, reason, files_removed })),
  };
  const manifestPath = `_manifests/${runId}.json`;
  // One line: warehouses read manifests as newline-delimited JSON (BigQuery).
  await sink.writeAtomic(manifestPath, JSON.stringify(manifest) + '\n');
  // after the purge manifest: loaders learn of the purge even if a manifest cannot be rewritten
  const { redacted, unreadable } = await redactManifests(sink, schoolId);
  return { manifestPath, manifest, removed: [...data, ...state], redacted, unreadable };
}

/**
 * Rewrites (atomically) every manifest that lists deletion records of the school, without them.
 * Its tasks stay listed: they name files, not people, and loaders skip them after the purge.
 */
export async function redactManifests(sink: Sink, schoolId: string): Promise<{ redacted: string[]; unreadable: string[] }> {
  return redactDeletions(sink, (_run, d) => d.school_id === schoolId);
}
