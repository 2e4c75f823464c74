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

/**
 * One manifest document to apply. A finished run has its whole-run manifest; a run that was
 * killed (or is still going) has only parts (`_manifests/<run_id>/part-<seq>.json`), each listing
 * tasks whose state already advanced: those must be loaded too, or their rows would never reach
 * the warehouse. `key` is what the loader records as applied; when a run's final manifest arrives
 * after some of its parts were applied, `appliedParts` names them so their tasks are not staged twice.
 */
export interface PendingManifest {
  key: string;
  runId: string;
  path: string;
  appliedParts: string[];
}

/** Manifest documents in run_id order (parts before their run's final manifest), applied ones left out. */
export async function pendingManifests(src: WarehouseSource, applied: ReadonlySet<string>): Promise<PendingManifest[]> {
  const finals = new Map<string, string>();
  const parts = new Map<string, string[]>();
  for (const p of await src.list(MANIFEST_DIR)) {
    const rel = p.slice(MANIFEST_DIR.length);
    const whole = /^([^/]+)\.json$/.exec(rel);
    const part = /^([^/]+)\/part-\d+\.json$/.exec(rel);
    if (whole && RUN_ID.test(whole[1]!)) finals.set(whole[1]!, p);
    else if (part && RUN_ID.test(part[1]!)) parts.set(part[1]!, [...(parts.get(part[1]!) ?? []), p]);
  }
  const out: PendingManifest[] = [];
  for (const runId of [...new Set([...finals.keys(), ...parts.keys()])].sort()) {
    const runParts = (parts.get(runId) ?? []).sort();
    const final = finals.get(runId);
    if (final !== undefined) {
      if (!applied.has(runId))
        out.push({ key: runId, runId, path: final, appliedParts: runParts.filter((pp) => applied.has(partKey(pp))) });
    } else {
      for (const pp of runParts) if (!applied.has(partKey(pp))) out.push({ key: partKey(pp), runId, path: pp, appliedParts: [] });
    }
  }
  return out;
}

/** '_manifests/<run>/part-00001.json' -> '<run>/part-00001' */
export function partKey(partPath: string): string {
  return partPath.slice(MANIFEST_DIR.length, -'.json'.length);
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
  if (!RUN_ID.test(String(m.run_id)))
    throw new ExportError('E_STATE', `manifest run_id ${JSON.stringify(String(m.run_id)).slice(0, 60)} is not a run id`);
  // School ids end up in SQL text and paths: only the id form the API uses is accepted.
  const schoolOf = (id: unknown): string => {
    if (!isSafeId(id))
      throw new ExportError('E_STATE', `manifest ${m.run_id} names an unsafe school id ${JSON.stringify(String(id)).slice(0, 60)}`);
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
        throw new ExportError(
          'E_STATE',
          `manifest ${m.run_id} lists an unsafe or misplaced file path ${JSON.stringify(f.path).slice(0, 120)}`,
        );
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
