import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { ConfigError, ExportError, oneLine } from '../errors.ts';
import type { ManifestFile } from '../manifest/types.ts';
import type { TableSchema } from '../table.ts';
import { localFiles, type LocalFiles } from './fetch-file.ts';
import { manifestLoad, pendingManifests, readManifest, type PendingManifest, type WarehouseSource } from './manifests.ts';
import type { Manifest } from '../manifest/types.ts';
import { buildPlan, RUNS_TABLE, type Plan, type TablePlan } from './plan.ts';
import {
  addColumnsSql,
  compactSql,
  describeSql,
  duckdbDdl,
  duckdbMerges,
  formatOfPath,
  markMergedSql,
  recordRunSql,
  recordSnapshotsSql,
  stageByNameSql,
  stageNdjsonSql,
  unmergedRunsSql,
} from './render-duckdb.ts';

export interface LoadOptions {
  /** The export destination (a Sink: local or S3). */
  sink: WarehouseSource;
  dbPath: string;
  tables: TableSchema[];
  onProgress?: (msg: string) => void;
  /** Check each file against its manifest's sha256 before loading it (default true). */
  verifyChecksums?: boolean;
  /** Keep every staged row version instead of compacting _raw_ tables after the merge (default false). */
  keepHistory?: boolean;
}

export interface LoadResult {
  /** Runs applied by this load, in the order applied. */
  appliedRuns: string[];
  /** Rows per current-state table after the load. */
  tables: Record<string, number>;
}

/**
 * Applies the manifests not yet applied, in run_id order, each in one transaction (its files
 * staged into _raw_<table>, its snapshots and its run recorded), then merges the staged history
 * into the current-state tables. A crash between runs leaves whole runs applied, never part of one.
 */
export async function loadIntoDuckDb(opts: LoadOptions): Promise<LoadResult> {
  const plan = buildPlan(opts.tables);
  const progress = opts.onProgress ?? (() => {});
  const instance = await DuckDBInstance.create(opts.dbPath).catch((e: unknown) => {
    throw new ConfigError(
      `cannot open the DuckDB database ${opts.dbPath} (${oneLine(e)}): give a writable path not open in another process`,
    );
  });
  const conn = await instance.connect();
  const files = localFiles(opts.sink, { verify: opts.verifyChecksums ?? true });
  try {
    // ISO text with Z and UTC-adjusted Parquet are instants either way; UTC keeps casts of naive values exact.
    await conn.run("SET TimeZone = 'UTC'");
    for (const s of duckdbDdl(plan)) await conn.run(s);
    for (const t of plan.tables) for (const s of addColumnsSql(t)) await conn.run(s);

    const applied = new Set((await rows(conn, `SELECT run_id FROM "${RUNS_TABLE}"`)).map((r) => String(r.run_id)));
    const pending = await pendingManifests(opts.sink, applied);
    // A purge removed the school's files: tasks of that school from earlier runs are skipped
    // (their files are gone), and the purge itself empties the school's tables.
    const purgedAt = new Map<string, string>();
    const documents = new Map<string, Manifest>();
    for (const m of pending) {
      const doc = await readManifest(opts.sink, m.path, m.runId);
      documents.set(m.key, doc);
      for (const p of doc.purged ?? []) if ((purgedAt.get(p.school_id) ?? '') < m.runId) purgedAt.set(p.school_id, m.runId);
    }
    const appliedRuns: string[] = [];
    // A run that fails to apply is rolled back whole and stops the load; the runs applied
    // before it are still merged, so the tables reflect every run up to the failure.
    let failure: unknown;
    for (const m of pending) {
      progress(`applying run ${m.runId}`);
      try {
        await applyManifest(conn, plan, files, opts.sink, m, documents.get(m.key)!, purgedAt, progress);
      } catch (e) {
        failure = e;
        break;
      }
      if (!appliedRuns.includes(m.runId)) appliedRuns.push(m.runId);
    }
    const [unmerged] = await rows(conn, unmergedRunsSql);
    if (Number(unmerged?.n ?? 0) > 0) {
      await inTransaction(conn, async () => {
        for (const s of duckdbMerges(plan)) await conn.run(s);
        if (!opts.keepHistory) for (const s of compactSql(plan)) await conn.run(s);
        await conn.run(markMergedSql);
      });
      progress(`merged ${Number(unmerged?.n)} run(s) into ${plan.tables.length} table(s)`);
    } else {
      progress('no new runs to apply');
    }
    if (failure !== undefined) throw failure;
    const counts: Record<string, number> = {};
    for (const t of plan.tables) {
      const [r] = await rows(conn, `SELECT count(*)::BIGINT AS n FROM "${t.name}"`);
      counts[t.name] = Number(r?.n ?? 0);
    }
    return { appliedRuns, tables: counts };
  } finally {
    await files.close();
    conn.closeSync();
    instance.closeSync();
  }
}

async function applyManifest(
  conn: DuckDBConnection,
  plan: Plan,
  files: LocalFiles,
  src: WarehouseSource,
  m: PendingManifest,
  document: Manifest,
  purgedAt: ReadonlyMap<string, string>,
  progress: (msg: string) => void,
): Promise<void> {
  const staged = new Set<string>();
  for (const pp of m.appliedParts) {
    for (const t of (await readManifest(src, pp, m.runId)).tasks) staged.add(`${t.school_id}|${t.resource}`);
  }
  const manifest: Manifest = {
    ...document,
    tasks: document.tasks.filter((t) => !staged.has(`${t.school_id}|${t.resource}`) && !((purgedAt.get(t.school_id) ?? '') > m.runId)),
  };
  const byName = new Map(plan.tables.map((t) => [t.name, t]));
  const load = manifestLoad(manifest, [...byName.keys()]);
  await inTransaction(conn, async () => {
    for (const f of load.files) {
      const t = byName.get(f.table);
      if (!t) {
        progress(`skipping ${f.path}: table ${f.table} is not among the tables being loaded`);
        continue;
      }
      await stageFile(conn, t, files, f);
    }
    const snaps = load.snapshots.filter((s) => byName.has(s.table));
    if (snaps.length > 0) {
      await conn.run(recordSnapshotsSql(snaps.map((s) => ({ runId: m.runId, schoolId: s.schoolId, table: s.table }))));
    }
    await conn.run(recordRunSql(m.key, m.path));
  });
}

async function stageFile(conn: DuckDBConnection, t: TablePlan, files: LocalFiles, f: ManifestFile): Promise<void> {
  const format = formatOfPath(f.path);
  if (!format) throw new ExportError('E_STATE', `${f.path}: unknown file type (expected .ndjson, .ndjson.gz, .csv or .parquet)`);
  const local = await files.get(f);
  try {
    if (format === 'ndjson') {
      await conn.run(stageNdjsonSql(t, local.path));
    } else {
      const described = await rows(conn, describeSql(format, local.path));
      const present = new Set(described.map((r) => String(r.column_name)));
      await conn.run(stageByNameSql(t, format, local.path, present));
    }
  } catch (e) {
    if (e instanceof ExportError) throw e;
    throw new ExportError('E_STATE', `loading ${f.path} into ${t.name} failed: ${e instanceof Error ? e.message : String(e)}`, {
      cause: e,
    });
  } finally {
    await local.release();
  }
}

async function inTransaction(conn: DuckDBConnection, body: () => Promise<void>): Promise<void> {
  await conn.run('BEGIN TRANSACTION');
  try {
    await body();
    await conn.run('COMMIT');
  } catch (e) {
    await conn.run('ROLLBACK').catch(() => {});
    throw e;
  }
}

async function rows(conn: DuckDBConnection, sql: string): Promise<Record<string, unknown>[]> {
  const reader = await conn.runAndReadAll(sql);
  return reader.getRowObjectsJS() as Record<string, unknown>[];
}
