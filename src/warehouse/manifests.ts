import type { Readable } from 'node:stream';
import { ExportError } from '../errors.ts';
import { isSafeId } from '../ids.ts';
import type { Manifest, ManifestFile, ManifestTask } from '../manifest/types.ts';
import { DELETIONS_TABLE, PURGE_RESOURCE } from './plan.ts';

/** The part of a Sink the loaders use (a full Sink fits). */
export interface WarehouseSource {
  readonly url?: string;
  read(relPath: string): Promise<Buffer | undefined>;
  list(prefix: string): Promise<string[]>;
  localPath?(relPath: string): string;
  /** Streams a file (not in Sink yet): when present, remote files are copied without buffering them whole. */
  readStream?(relPath: string): Promise<Readable | undefined>;
}

export const MANIFEST_DIR = '_manifests/';
const RUN_ID = /^[0-9A-Za-z][0-9A-Za-z_.-]{0,127}$/;
// Relative data paths as the pipeline writes them: no empty, '.' or '..' segments, no backslash.
const SAFE_REL_PATH = /^(?!.*(^|\/)\.{1,2}(\/|$))[A-Za-z0-9_=.-]+(\/[A-Za-z0-9_=.-]+)*$/;

/**
 * One manifest document: a run's manifest (`_manifests/<run_id>.json`, written last) or a part
 * of it (`_manifests/<run_id>/part-<seq>.json`, one per commit batch). A run killed midway, or
 * still going, has only parts; a finished run's manifest lists again every task of its parts.
 * Loaders apply each committed task once, by its key, whichever documents list it.
 */
export interface ManifestDoc {
  path: string;
  runId: string;
}

/** Manifest documents in run_id order (a run's parts before its manifest). */
export async function listManifests(src: WarehouseSource): Promise<ManifestDoc[]> {
  const out: ManifestDoc[] = [];
  for (const p of await src.list(MANIFEST_DIR)) {
    const rel = p.slice(MANIFEST_DIR.length);
    const m = /^([^/]+)\.json$/.exec(rel) ?? /^([^/]+)\/part-\d+\.json$/.exec(rel);
    if (m && RUN_ID.test(m[1]!)) out.push({ path: p, runId: m[1]! });
  }
  const rank = (d: ManifestDoc): string => `${d.runId}\u0000${d.path.endsWith(`/${d.runId}.json`) ? '1' : '0'}${d.path}`;
  return out.sort((a, b) => (rank(a) < rank(b) ? -1 : rank(a) > rank(b) ? 1 : 0));
}

/** '_manifests/<run>/part-00001.json' -> '<run>/part-00001': how loaders before task keys named an applied part. */
export function legacyKey(doc: ManifestDoc): string {
  return doc.path === `${MANIFEST_DIR}${doc.runId}.json` ? doc.runId : doc.path.slice(MANIFEST_DIR.length, -'.json'.length);
}

export async function readManifest(src: WarehouseSource, path: string, runId: string): Promise<Manifest> {
  const buf = await src.read(path);
  if (!buf) throw new ExportError('E_STATE', `manifest ${path} disappeared while loading`);
  return parseManifest(buf, path, runId);
}

/** A manifest's bytes, checked: valid JSON, version 1, naming the run its path names. */
export function parseManifest(buf: Buffer, path: string, runId: string): Manifest {
  let m: Manifest;
  try {
    m = JSON.parse(buf.toString('utf8')) as Manifest;
  } catch (e) {
    throw new ExportError('E_STATE', `manifest ${path} is not valid JSON: fix or remove it`, { cause: e });
  }
  if (m === null || typeof m !== 'object' || m.version !== 1 || !Array.isArray(m.tasks)) {
    throw new ExportError('E_STATE', `manifest ${path} is not a version 1 manifest`);
  }
  if (m.run_id !== runId) throw new ExportError('E_STATE', `manifest ${path} names run ${String(m.run_id)}, not ${runId}`);
  return m;
}

/** A committed task of a manifest, checked and keyed. */
export interface LoadTask {
  runId: string;
  schoolId: string;
  resource: string;
  /** The checkpoint piece (0 for a task read in one piece). */
  seq: number;
  /** (run_id, school_id, resource, seq): a task is applied once whatever documents list it. */
  key: string;
  manifest: string;
  mode: ManifestTask['mode'];
  files: ManifestFile[];
  /** Set on a full read's last (or only) piece: rows of its tables last seen before this run are gone. */
  snapshot?: string;
  /** Columns this task's token could not read (scope-masked nulls), as [table, column]. */
  masked: [string, string][];
  /** The manifest records person ids as pseudonymised. */
  pseudonymised: boolean;
}

export interface Purge {
  runId: string;
  schoolId: string;
  key: string;
}

export const taskKey = (runId: string, schoolId: string, resource: string, seq: number): string =>
  `${runId}|${schoolId}|${resource}|${seq}`;

/** The committed tasks and purges of a manifest document; unsafe ids and paths are refused. */
export function manifestEntries(m: Manifest, manifestPath: string): { tasks: LoadTask[]; purges: Purge[] } {
  if (!RUN_ID.test(String(m.run_id)))
    throw new ExportError('E_STATE', `manifest run_id ${JSON.stringify(String(m.run_id)).slice(0, 60)} is not a run id`);
  // School ids end up in SQL text and paths: only the id form the API uses is accepted.
  const schoolOf = (id: unknown): string => {
    if (!isSafeId(id))
      throw new ExportError('E_STATE', `manifest ${m.run_id} names an unsafe school id ${JSON.stringify(String(id)).slice(0, 60)}`);
    return id;
  };
  const pseudonymised = m.personal_data?.person_id === 'pseudonymise';
  const tasks: LoadTask[] = [];
  for (const task of m.tasks) {
    if (task.status !== 'committed') continue;
    const schoolId = schoolOf(task.school_id);
    for (const f of task.files ?? []) {
      if (!SAFE_REL_PATH.test(f.path) || !f.path.startsWith(`${f.table}/`)) {
        throw new ExportError(
          'E_STATE',
          `manifest ${m.run_id} lists an unsafe or misplaced file path ${JSON.stringify(f.path).slice(0, 120)}`,
        );
      }
    }
    const seq = task.checkpoint?.seq ?? 0;
    const final = task.checkpoint?.final ?? true;
    tasks.push({
      runId: m.run_id,
      schoolId,
      resource: String(task.resource),
      seq,
      key: taskKey(m.run_id, schoolId, String(task.resource), seq),
      manifest: manifestPath,
      mode: task.mode,
      files: task.files ?? [],
      ...(task.mode === 'full' && final ? { snapshot: task.checkpoint?.snapshot ?? m.run_id } : {}),
      masked: Object.entries(task.scope_masked ?? {}).flatMap(([table, cols]) =>
        (Array.isArray(cols) ? cols : []).map((col): [string, string] => [table, String(col)]),
      ),
      pseudonymised,
    });
  }
  const purges = (m.purged ?? []).map((p) => {
    const schoolId = schoolOf(p.school_id);
    // A purge of what a weaker personal-data policy wrote (before_run) removes the rows of runs
    // before that run, not before the purge's own: it is applied as a purge at before_run.
    const runId = p.before_run === undefined ? m.run_id : checkedRunId(p.before_run);
    return { runId, schoolId, key: taskKey(runId, schoolId, PURGE_RESOURCE, 0) };
  });
  return { tasks, purges };
}

function checkedRunId(v: unknown): string {
  if (typeof v !== 'string' || !RUN_ID.test(v))
    throw new ExportError('E_STATE', `a manifest names an unsafe before_run ${JSON.stringify(String(v)).slice(0, 60)}`);
  return v;
}

/**
 * The tables a task's full snapshot covers: its resource's table and the tables it wrote files
 * for (so an empty snapshot counts too), except `deletions`, a log of events rather than a state.
 */
export function snapshotTables(t: LoadTask, known: readonly string[]): string[] {
  if (t.snapshot === undefined) return [];
  const tables = new Set([t.resource, ...t.files.map((f) => f.table)]);
  return [...tables].filter((n) => n !== DELETIONS_TABLE && known.includes(n));
}

/**
 * What a load applies: each committed task not applied yet (by key), except tasks of a school
 * from runs that started before a purge of it (their files are gone, and the school's data must
 * not come back), in run_id order.
 */
export function pendingTasks(
  tasks: readonly LoadTask[],
  applied: ReadonlySet<string>,
  purges: readonly { runId: string; schoolId: string }[],
): LoadTask[] {
  const lastPurge = new Map<string, string>();
  for (const p of purges) if ((lastPurge.get(p.schoolId) ?? '') < p.runId) lastPurge.set(p.schoolId, p.runId);
  const seen = new Set<string>();
  const out: LoadTask[] = [];
  for (const t of tasks) {
    if (applied.has(t.key) || seen.has(t.key)) continue;
    if ((lastPurge.get(t.schoolId) ?? '') > t.runId) continue;
    seen.add(t.key);
    out.push(t);
  }
  return out.sort((a, b) => (a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : 0));
}
