import type { Readable } from 'node:stream';
import { ExportError } from '../errors.ts';
import { isSafeId } from '../ids.ts';
import type { Manifest, ManifestFile } from '../manifest/types.ts';
import { DELETIONS_TABLE } from './plan.ts';

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

/** Manifest paths in run_id order, those whose run is in `applied` left out. */
export async function pendingManifests(src: WarehouseSource, applied: ReadonlySet<string>): Promise<{ runId: string; path: string }[]> {
  const paths = await src.list(MANIFEST_DIR);
  return paths
    .filter((p) => p.endsWith('.json') && !p.slice(MANIFEST_DIR.length).includes('/'))
    .map((p) => ({ runId: p.slice(MANIFEST_DIR.length, -'.json'.length), path: p }))
    .filter((m) => RUN_ID.test(m.runId) && !applied.has(m.runId))
    .sort((a, b) => (a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : 0));
}

export async function readManifest(src: WarehouseSource, path: string, runId: string): Promise<Manifest> {
  const buf = await src.read(path);
  if (!buf) throw new ExportError('E_STATE', `manifest ${path} disappeared while loading`);
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

export interface ManifestLoad {
  files: ManifestFile[];
  /** (school, table) pairs whose rows not seen in this run are gone upstream. */
  snapshots: { schoolId: string; table: string }[];
}

/**
 * What a manifest asks the loader to do. Only committed tasks count. A full task snapshots the
 * tables it wrote (files or row counts, so an empty snapshot counts too), except `deletions`,
 * which is a log of events rather than a state; a purge snapshots every table of the school.
 */
export function manifestLoad(m: Manifest, knownTables: readonly string[]): ManifestLoad {
  if (!RUN_ID.test(String(m.run_id))) throw new ExportError('E_STATE', `manifest run_id ${JSON.stringify(String(m.run_id)).slice(0, 60)} is not a run id`);
  // School ids end up in SQL text and paths: only the id form the API uses is accepted.
  const schoolOf = (id: unknown): string => {
    if (!isSafeId(id)) throw new ExportError('E_STATE', `manifest ${m.run_id} names an unsafe school id ${JSON.stringify(String(id)).slice(0, 60)}`);
    return id;
  };
  const files: ManifestFile[] = [];
  const snapshots = new Map<string, { schoolId: string; table: string }>();
  const snap = (schoolId: string, table: string): void => {
    snapshots.set(`${schoolId}\u0000${table}`, { schoolId, table });
  };
  for (const task of m.tasks) {
    if (task.status !== 'committed') continue;
    const schoolId = schoolOf(task.school_id);
    for (const f of task.files ?? []) {
      if (!SAFE_REL_PATH.test(f.path) || !f.path.startsWith(`${f.table}/`)) {
        throw new ExportError('E_STATE', `manifest ${m.run_id} lists an unsafe or misplaced file path ${JSON.stringify(f.path).slice(0, 120)}`);
      }
      files.push(f);
    }
    if (task.mode === 'full') {
      const tables = new Set([...Object.keys(task.rows ?? {}), ...(task.files ?? []).map((f) => f.table)]);
      if (knownTables.includes(task.resource)) tables.add(task.resource);
      for (const t of tables) if (t !== DELETIONS_TABLE) snap(schoolId, t);
    }
  }
  for (const p of m.purged ?? []) for (const t of knownTables) snap(schoolOf(p.school_id), t);
  return { files, snapshots: [...snapshots.values()] };
}
