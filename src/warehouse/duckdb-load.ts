import type { DuckDBConnection } from '@duckdb/node-api';
import pLimit from 'p-limit';
import { ConfigError, ExportError, oneLine } from '../errors.ts';
import type { ManifestFile } from '../manifest/types.ts';
import type { TableSchema } from '../table.ts';
import { addColumnsSql, describeSql, formatOfPath, stageByNameSql, stageNdjsonSql } from './duckdb-stage.ts';
import { localFiles, type LocalFiles } from './fetch-file.ts';
import {
  legacyKey,
  listManifests,
  manifestEntries,
  pendingTasks,
  readManifest,
  snapshotTables,
  type LoadTask,
  type Purge,
  type WarehouseSource,
} from './manifests.ts';
import { ddlStatements, mergeAndCompact, purgeStatements } from './merge-sql.ts';
import {
  buildPlan,
  LEGACY_RUNS_TABLE,
  MANIFESTS_TABLE,
  MASKED_TABLE,
  PURGE_RESOURCE,
  SNAPSHOTS_TABLE,
  TASKS_TABLE,
  type Plan,
  type TablePlan,
} from './plan.ts';
import { duckdbSql } from './render-duckdb.ts';

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
  /** Refuse to load anything when a pending task's manifest does not record person ids as pseudonymised. */
  requirePseudonymised?: boolean;
}

export interface LoadResult {
  /** Runs with tasks (or a purge) applied by this load, in the order applied. */
  appliedRuns: string[];
  /** Tasks applied by this load. */
  appliedTasks: number;
  /** Rows per current-state table after the load. */
  tables: Record<string, number>;
}

const d = duckdbSql();
const q = (v: string): string => d.str(v);

/**
 * Applies the committed tasks not yet applied (by task key: run, school, resource, checkpoint
 * piece), run by run in run_id order, each run in one transaction (its files staged with their
 * checksums checked, its snapshots and task keys recorded), then merges the touched schools into
 * the current-state tables. A crash between runs leaves whole runs applied, never part of one;
 * loading again applies what is left, and loading twice changes nothing.
 */
export async function loadIntoDuckDb(opts: LoadOptions): Promise<LoadResult> {
  const plan = buildPlan(opts.tables);
  const progress = opts.onProgress ?? (() => {});
  // Loaded here, not at the top: only `warehouse load` needs the DuckDB binding.
  const { DuckDBInstance } = await import('@duckdb/node-api');
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
    for (const s of ddlStatements(plan, d)) await conn.run(s);
    await conn.run(`CREATE TABLE IF NOT EXISTS ${d.table(MANIFESTS_TABLE)} (manifest VARCHAR NOT NULL, read_at TIMESTAMPTZ)`);
    for (const t of plan.tables) for (const s of addColumnsSql(t)) await conn.run(s);

    const state = await readLoadState(conn, opts.sink);
    if (opts.requirePseudonymised) refuseUnpseudonymised(state.pending);

    const appliedRuns: string[] = [];
    let appliedTasks = 0;
    // A run that fails to apply is rolled back whole and stops the load; the runs applied
    // before it are still merged, so the tables reflect every run up to the failure.
    let failure: unknown;
    for (const runId of [...new Set([...state.pending.map((t) => t.runId), ...state.purges.map((p) => p.runId)])].sort()) {
      progress(`applying run ${runId}`);
      const tasks = state.pending.filter((t) => t.runId === runId);
      const purges = state.purges.filter((p) => p.runId === runId);
      try {
        await inTransaction(conn, () => applyRun(conn, plan, files, tasks, purges, progress));
      } catch (e) {
        failure = e;
        break;
      }
      for (const t of [...tasks, ...purges]) state.applied.add(t.key);
      appliedRuns.push(runId);
      appliedTasks += tasks.length;
    }
    const [unmerged] = await rows(
      conn,
      `SELECT count(*)::BIGINT AS n, count(DISTINCT school_id)::BIGINT AS s FROM ${d.table(TASKS_TABLE)} WHERE merged_at IS NULL`,
    );
    if (Number(unmerged?.n ?? 0) > 0) {
      await inTransaction(conn, async () => {
        for (const s of mergeAndCompact(plan, d, { keepHistory: opts.keepHistory ?? false })) await conn.run(s);
      });
      progress(`merged ${Number(unmerged?.n)} task(s) of ${Number(unmerged?.s)} school(s) into ${plan.tables.length} table(s)`);
    } else {
      progress('no new tasks to apply');
    }
    // Documents all of whose tasks are applied (or never will be: purged) are not read again.
    const done = state.docs.filter((doc) => doc.keys.every((k) => state.applied.has(k) || state.blocked.has(k)));
    if (done.length > 0) {
      await conn.run(`INSERT INTO ${d.table(MANIFESTS_TABLE)} VALUES ${done.map((doc) => `(${q(doc.path)}, now())`).join(', ')}`);
    }
    if (failure !== undefined) throw failure;
    const counts: Record<string, number> = {};
    for (const t of plan.tables) {
      const [r] = await rows(conn, `SELECT count(*)::BIGINT AS n FROM ${d.table(t.name)}`);
      counts[t.name] = Number(r?.n ?? 0);
    }
    return { appliedRuns, appliedTasks, tables: counts };
  } finally {
    await files.close();
    conn.closeSync();
    instance.closeSync();
  }
}

interface LoadState {
  applied: Set<string>;
  /** Task keys of schools purged after their run started: never loaded. */
  blocked: Set<string>;
  pending: LoadTask[];
  purges: Purge[];
  docs: { path: string; keys: string[] }[];
}

/** What is applied (the task keys in the warehouse) and what is pending (the manifests not read to the end). */
async function readLoadState(conn: DuckDBConnection, src: WarehouseSource): Promise<LoadState> {
  const applied = new Set(
    (await rows(conn, `SELECT run_id, school_id, resource, seq FROM ${d.table(TASKS_TABLE)}`)).map(
      (r) => `${String(r.run_id)}|${String(r.school_id)}|${String(r.resource)}|${Number(r.seq)}`,
    ),
  );
  const allPurges: { runId: string; schoolId: string }[] = (
    await rows(conn, `SELECT run_id, school_id FROM ${d.table(TASKS_TABLE)} WHERE resource = ${q(PURGE_RESOURCE)}`)
  ).map((r) => ({ runId: String(r.run_id), schoolId: String(r.school_id) }));
  const read = new Set((await rows(conn, `SELECT manifest FROM ${d.table(MANIFESTS_TABLE)}`)).map((r) => String(r.manifest)));
  const legacy = await legacyRuns(conn);

  const tasks: LoadTask[] = [];
  const purges: Purge[] = [];
  const docs: LoadState['docs'] = [];
  const migrated: LoadTask[] = [];
  // Read side by side (S3 GETs), handled in run order.
  const limit = pLimit(8);
  const unread = (await listManifests(src)).filter((doc) => !read.has(doc.path));
  const documents = await Promise.all(unread.map((doc) => limit(async () => ({ doc, m: await readManifest(src, doc.path, doc.runId) }))));
  for (const { doc, m } of documents) {
    const entries = manifestEntries(m, doc.path);
    docs.push({ path: doc.path, keys: [...entries.tasks, ...entries.purges].map((t) => t.key) });
    // A loader before task keys recorded this document as applied: its tasks are in the tables.
    if (legacy?.has(legacyKey(doc))) migrated.push(...entries.tasks.filter((t) => !applied.has(t.key)));
    tasks.push(...entries.tasks);
    purges.push(...entries.purges);
    allPurges.push(...entries.purges);
  }
  if (legacy) await migrateLegacy(conn, migrated, applied, purges);
  const pending = pendingTasks(tasks, applied, allPurges);
  const pendingKeys = new Set(pending.map((t) => t.key));
  const blocked = new Set(tasks.filter((t) => !applied.has(t.key) && !pendingKeys.has(t.key)).map((t) => t.key));
  const newPurges = [...new Map(purges.filter((p) => !applied.has(p.key)).map((p) => [p.key, p])).values()];
  return { applied, blocked, pending, purges: newPurges, docs };
}

/** Tables of databases written before task keys: run ids and part keys of applied documents. */
async function legacyRuns(conn: DuckDBConnection): Promise<Set<string> | undefined> {
  const [exists] = await rows(
    conn,
    `SELECT count(*)::BIGINT AS n FROM duckdb_tables() WHERE table_name = ${q(LEGACY_RUNS_TABLE)} AND schema_name = 'main'`,
  );
  if (Number(exists?.n ?? 0) === 0) return undefined;
  return new Set((await rows(conn, `SELECT run_id FROM ${d.table(LEGACY_RUNS_TABLE)}`)).map((r) => String(r.run_id)));
}

/** Records the tasks of documents the old loader applied, with their purges, then drops its table. */
async function migrateLegacy(conn: DuckDBConnection, tasks: LoadTask[], applied: Set<string>, purges: Purge[]): Promise<void> {
  await inTransaction(conn, async () => {
    const seen = new Set<string>();
    for (const t of tasks) {
      if (seen.has(t.key)) continue;
      seen.add(t.key);
      await conn.run(recordTaskSql(t, 'now()'));
      applied.add(t.key);
    }
    const legacy = new Set((await rows(conn, `SELECT run_id FROM ${d.table(LEGACY_RUNS_TABLE)}`)).map((r) => String(r.run_id)));
    for (const p of purges) {
      if (!legacy.has(p.runId) || applied.has(p.key)) continue;
      await conn.run(recordPurgeSql(p, 'now()'));
      applied.add(p.key);
    }
    await conn.run(`DROP TABLE ${d.table(LEGACY_RUNS_TABLE)}`);
  });
}

function refuseUnpseudonymised(pending: LoadTask[]): void {
  const bad = [...new Set(pending.filter((t) => !t.pseudonymised).map((t) => t.runId))];
  if (bad.length === 0) return;
  throw new ExportError(
    'E_POLICY',
    `--require-pseudonymised: run ${bad[0]}${bad.length > 1 ? ` (and ${bad.length - 1} more)` : ''} was not pseudonymised ` +
      '(its manifest has no personal_data policy with person_id: pseudonymise); nothing was loaded',
  );
}

async function applyRun(
  conn: DuckDBConnection,
  plan: Plan,
  files: LocalFiles,
  tasks: LoadTask[],
  purges: Purge[],
  progress: (msg: string) => void,
): Promise<void> {
  const byName = new Map(plan.tables.map((t) => [t.name, t]));
  const known = [...byName.keys()];
  for (const p of purges) {
    for (const s of purgeStatements(plan, d, `SELECT ${q(p.runId)} AS run_id, ${q(p.schoolId)} AS school_id`)) await conn.run(s);
    await conn.run(recordPurgeSql(p, 'NULL'));
  }
  for (const t of tasks) {
    for (const f of t.files) {
      const tp = byName.get(f.table);
      if (!tp) {
        progress(`skipping ${f.path}: table ${f.table} is not among the tables being loaded`);
        continue;
      }
      await stageFile(conn, tp, files, f);
    }
    const snaps = snapshotTables(t, known);
    if (snaps.length > 0) {
      await conn.run(
        `INSERT INTO ${d.table(SNAPSHOTS_TABLE)} VALUES ${snaps.map((n) => `(${q(t.snapshot!)}, ${q(t.schoolId)}, ${q(n)})`).join(', ')}`,
      );
    }
    const masked = t.masked.filter(([table]) => byName.has(table));
    if (masked.length > 0) {
      await conn.run(
        `INSERT INTO ${d.table(MASKED_TABLE)} VALUES ${masked.map(([table, col]) => `(${q(t.runId)}, ${q(t.schoolId)}, ${q(table)}, ${q(col)})`).join(', ')}`,
      );
    }
    await conn.run(recordTaskSql(t, 'NULL'));
  }
}

function recordTaskSql(t: LoadTask, mergedAt: string): string {
  return (
    `INSERT INTO ${d.table(TASKS_TABLE)} VALUES (${q(t.runId)}, ${q(t.schoolId)}, ${q(t.resource)}, ${t.seq}, ${q(t.manifest)}, ` +
    `${q(t.mode)}, ${t.snapshot === undefined ? 'NULL' : q(t.snapshot)}, now(), ${mergedAt})`
  );
}

function recordPurgeSql(p: Purge, mergedAt: string): string {
  return `INSERT INTO ${d.table(TASKS_TABLE)} VALUES (${q(p.runId)}, ${q(p.schoolId)}, ${q(PURGE_RESOURCE)}, 0, NULL, NULL, NULL, now(), ${mergedAt})`;
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
