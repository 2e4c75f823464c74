import type { DuckDBConnection } from '@duckdb/node-api';
import { existsSync } from 'node:fs';
import pLimit from 'p-limit';
import { ConfigError, ExportError, oneLine } from '../errors.ts';
import { groupBy } from '../group-by.ts';
import { compareDocs, docOf, listDocs, type ManifestDoc } from '../manifest/layout.ts';
import type { TableSchema } from '../table.ts';
import { allocatorConfFor, newestExportSize, prepareDuckDbAllocator, threadsFor } from './duckdb-allocator.ts';
import {
  addColumnsSql,
  columnsSql,
  describeSql,
  type FileSize,
  readerBufferBytes,
  readerKind,
  selectByNameSql,
  selectNdjsonSql,
  stageByNameSql,
  stageNdjsonSql,
} from './duckdb-stage.ts';
import { localFiles, MissingFileError, type LocalFiles } from './fetch-file.ts';
import { removeScratch, SCRATCH, scratchDialect, scratchPath } from './duckdb-scratch.ts';
import { ManifestTables, type WarehouseSource } from './manifests.ts';
import { compactTable, markMergedStatements, mergeStatement, snapshotCleanup } from './merge-sql.ts';
import {
  T,
  appendStatements,
  pendingStatements,
  rebuildStatements,
  recordStatements,
  setupStatements,
  stageName,
  stagedCountCheckedAtOnce,
  stagedCountStatements,
  type Absent,
  type NightlyParts,
} from './nightly.ts';
import {
  buildPlan,
  LEGACY_RUNS_TABLE,
  MANIFESTS_TABLE,
  PURGE_RESOURCE,
  SUPERSEDED_TABLE,
  TASKS_TABLE,
  TOUCHED_TABLE,
  rawName,
  type Plan,
  type TablePlan,
} from './plan.ts';
import { duckdbSql } from './render-duckdb.ts';
import { fullRefreshHint, noLaterFullRead, supersededPending, type SupersededTask } from './supersede.ts';

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
  /**
   * Pending tasks' files of one table to leave out for good (`--supersede RUN/SCHOOL/TABLE`),
   * each justified by a later full read of the school's resource (supersede.ts), else nothing is
   * loaded (exit 2). Recorded in _school_export_superseded: later loads leave them out too.
   */
  supersede?: SupersededTask[];
  /** Refuse to load anything when a pending task's manifest does not record person ids as pseudonymised. */
  requirePseudonymised?: boolean;
  /** Files read by one staging statement (default 200: DuckDB holds every file's reader state at once). */
  filesPerStatement?: number;
  /**
   * DuckDB's memory limit in MiB, the file readers' buffers aside (default 128: the rest spills to
   * disk, so a load of any size stays bounded), which also bounds its threads (THREAD_MIB). DuckDB's
   * process holds more than its limit, and the limit is what bounds it: a full night of 10,000
   * schools (Parquet) peaked at 672 MB RSS at 256 MiB, 441-463 MB at 128, 369-394 MB at 64 and 80.
   * But at 64 and 80 MiB that load ran out of memory in some runs and not others (in statements
   * of the run's transaction, at different points each time: the cause is not found), so the
   * default stays at the limit no load has failed at.
   */
  memoryMiB?: number;
  /** What the file readers of one statement may hold between them, MiB (default 64; at least one reader). */
  readersMiB?: number;
  /** Rows one batch of a run's schools stages (default 200,000) and staged rows one merge statement works on (default 50,000); a school is never split. */
  batchRows?: number;
  mergeRows?: number;
  /** A batch's pending files, or a merge's touched pairs, up to this many are listed by one query, beyond it table by table (default LIST_AT_ONCE). */
  listAtOnce?: number;
  /**
   * DuckDB threads at most (default: one per core, one for a load of a few schools' changes:
   * threadsFor); the memory limit may allow fewer (THREAD_MIB).
   */
  threads?: number;
  /**
   * Called with each batch of files once they are checked, just before DuckDB reads them. Tests
   * make a compaction happen here, at a known point of a load.
   */
  beforeStage?: (batch: { runId: string; table: string; paths: string[] }) => Promise<void>;
}

export interface LoadResult {
  /** Runs with tasks (or a purge) applied by this load, in the order applied. */
  appliedRuns: string[];
  /** Tasks applied by this load. */
  appliedTasks: number;
  /** Rows per current-state table after the load. */
  tables: Record<string, number>;
}

const d = scratchDialect;
/** DuckDB's own dialect: TEMP tables where they are (the staging tables). */
const base = duckdbSql();
const q = (v: string): string => d.str(v);

/** Rows a batch of a run's schools stages, and staged rows a merge batch works on (a school is never split). */
const BATCH_ROWS = 200_000;
const MERGE_ROWS = 50_000;
/** A batch with at most this many pending files (a merge, touched pairs) lists them with one query, not one per table (about 250 bytes each in memory). */
const LIST_AT_ONCE = 5_000;
const MiB = 1024 * 1024;
const MEMORY_MIB = 128;
/**
 * What one DuckDB thread of a merge holds (its window and join state), by which the memory limit
 * caps the threads: merges failed with "Out of Memory" at 4 threads in 64 MiB and at 8 in 128
 * MiB, and passed at 3 in 96 and 8 in 256 (an incremental night of 2,000 schools).
 */
const THREAD_MIB = 32;
const READERS_MIB = 64;
/** Room over the readers' buffers for the rest of a reading statement (its plan, its output chunks). */
const READING_SLACK_MIB = 16;

/** Schools (with their row counts, in order) in consecutive batches of about `limit` rows. */
function batchesOf(schools: Record<string, unknown>[], limit: number): string[][] {
  const batches: string[][] = [[]];
  let rows = 0;
  for (const s of schools) {
    const n = Number(s.n);
    if (batches.at(-1)!.length > 0 && rows + n > limit) {
      batches.push([]);
      rows = 0;
    }
    batches.at(-1)!.push(String(s.school_id));
    rows += n;
  }
  return batches.filter((b) => b.length > 0);
}
/** The whole load's pending sets, kept aside under these names (computePending). */
const ASIDE = { pending: '_se_all_pending', pendingFiles: '_se_all_pending_files', pendingPurges: '_se_all_pending_purges' } as const;
const ALL = {
  pending: d.temp(ASIDE.pending),
  pendingFiles: d.temp(ASIDE.pendingFiles),
  pendingPurges: d.temp(ASIDE.pendingPurges),
} as const;

/**
 * Applies the committed tasks not yet applied (by task key: run, school, resource, checkpoint
 * piece), run by run in run_id order, each run in one transaction, then merges the touched
 * (school, table) pairs into the current-state tables, with the statements the static scripts
 * run (nightly.ts). What it holds in memory does not grow with schools, runs or tasks: the
 * manifests it has not read to the end are read one part at a time into the scratch database;
 * each table's pending files of a run are staged by one statement per batch of files (after
 * their sha256 is checked); the merge is set-based, and DuckDB spills beyond its memory limit.
 * A crash between runs leaves whole runs applied, never part of one; loading again applies what
 * is left, and loading twice changes nothing. A file a compaction removed while the load ran is
 * read from the file that replaced it (docs/manifest.md).
 */
export async function loadIntoDuckDb(opts: LoadOptions): Promise<LoadResult> {
  const plan = buildPlan(opts.tables);
  const progress = opts.onProgress ?? (() => {});
  const listed = await listDocs(opts.sink);
  const size = await newestExportSize(opts.sink, listed);
  prepareDuckDbAllocator(allocatorConfFor(size));
  // Loaded here, not at the top: only `warehouse load` needs the DuckDB binding.
  const { DuckDBInstance } = await import('@duckdb/node-api');
  const instance = await DuckDBInstance.create(opts.dbPath).catch((e: unknown) => {
    throw new ConfigError(
      `cannot open the DuckDB database ${opts.dbPath} (${oneLine(e)}): give a writable path not open in another process`,
    );
  });
  const conn = await instance.connect();
  // what a load that stopped half-way left (the warehouse is open: no other load is running)
  const scratch = scratchPath(opts.dbPath);
  removeScratch(scratch);
  const files = localFiles(opts.sink, { verify: opts.verifyChecksums ?? true });
  const tables = new ManifestTables(conn, { inScratch: true });
  try {
    await conn.run(`ATTACH ${q(scratch)} AS ${d.ident(SCRATCH)}`);
    return await new Load(conn, plan, { ...opts, threads: threadsFor(size, opts.threads) }, files, tables, progress, listed).run();
  } finally {
    tables.close();
    await files.close();
    await conn.run(`DETACH DATABASE IF EXISTS ${d.ident(SCRATCH)}`).catch(() => undefined);
    conn.closeSync();
    instance.closeSync();
    removeScratch(scratch);
  }
}

/**
 * Each key's rows, when asked for: all of them listed by one query (`all`) when `atOnce`, else
 * each key's by a query of its own (`one`), so that memory holds one key's rows at a time.
 */
async function listedAtOnceOrEach<R>(
  keys: string[],
  atOnce: boolean,
  all: () => Promise<Map<string, R[]>>,
  one: (key: string) => Promise<R[]>,
): Promise<Map<string, () => Promise<R[]>>> {
  const listed = atOnce && keys.length > 0 ? await all() : undefined;
  return new Map(keys.map((k) => [k, async () => (listed ? (listed.get(k) ?? []) : one(k))]));
}

class Load {
  private readonly parts: NightlyParts;
  /** Documents read by this load (a refresh reads only what appeared since). */
  private readonly read = new Set<string>();
  /** DuckDB's threads outside reading statements: as many as the memory limit holds (THREAD_MIB). */
  private threads = 1;

  constructor(
    private readonly conn: DuckDBConnection,
    private readonly plan: Plan,
    private readonly opts: LoadOptions,
    private readonly files: LocalFiles,
    private readonly tables: ManifestTables,
    private readonly progress: (msg: string) => void,
    /** The manifests listed before the load began: its first reading of them needs no other listing. */
    private firstListing?: ManifestDoc[],
  ) {
    this.parts = { plan, d, requirePseudonymised: false };
  }

  private exec = async (sql: string | string[]): Promise<void> => {
    for (const s of Array.isArray(sql) ? sql : [sql]) await this.conn.run(s);
  };

  private rows = async (sql: string): Promise<Record<string, unknown>[]> =>
    (await this.conn.runAndReadAll(sql)).getRowObjectsJS() as Record<string, unknown>[];

  /** Pending files, or touched pairs, up to which a batch or a merge lists them with one query. */
  private get listAtOnce(): number {
    return this.opts.listAtOnce ?? LIST_AT_ONCE;
  }

  private get memoryMiB(): number {
    return this.opts.memoryMiB ?? MEMORY_MIB;
  }

  /**
   * Runs a statement that reads files of `kind`. CSV and NDJSON readers each hold a buffer of 32
   * MiB or more, one per thread, and DuckDB counts them against its memory limit: at 128 MiB, a
   * load of NDJSON failed with "Out of Memory" on 8 threads. So such a statement gets as many
   * threads as READERS_MIB holds buffers (at least one), and the limit grows by their buffers for
   * its duration: memory stays bounded on any number of cores, and a long line still loads.
   */
  private async reading<T>(kind: string, files: FileSize[], body: () => Promise<T>): Promise<T> {
    const buffer = readerBufferBytes(kind, files);
    if (buffer === 0) return body();
    const readers = Math.max(1, Math.min(this.threads, Math.floor(((this.opts.readersMiB ?? READERS_MIB) * MiB) / buffer)));
    const limit = this.memoryMiB + Math.ceil((readers * buffer) / MiB) + READING_SLACK_MIB;
    const restore = [`SET memory_limit = '${this.memoryMiB}MiB'`, `SET threads = ${this.threads}`];
    await this.exec([`SET threads = ${readers}`, `SET memory_limit = '${limit}MiB'`]);
    let result: T;
    try {
      result = await body();
    } catch (e) {
      // the statement's own error is the one to report (explain() names the file from it)
      await this.exec(restore).catch(() => undefined);
      throw e;
    }
    await this.exec(restore);
    return result;
  }

  async run(): Promise<LoadResult> {
    const { plan } = this;
    // ISO text with Z and UTC-adjusted Parquet are instants either way; UTC keeps casts of naive values exact.
    await this.exec([
      "SET TimeZone = 'UTC'",
      `SET memory_limit = '${this.memoryMiB}MiB'`,
      // Rows of a table are a set: no need to keep the files' row order while staging.
      'SET preserve_insertion_order = false',
      // Each file is read once: caching it only holds memory (up to the limit) for nothing.
      'SET enable_external_file_cache = false',
      // Give memory back after each big step instead of keeping it for the next.
      "SET allocator_flush_threshold = '16MB'",
    ]);
    const [cores] = await this.rows(`SELECT current_setting('threads')::BIGINT AS n`);
    const wanted = this.opts.threads ? Math.floor(this.opts.threads) : Number(cores?.n ?? 1);
    this.threads = Math.max(1, Math.min(wanted, Math.floor(this.memoryMiB / THREAD_MIB)));
    await this.exec(`SET threads = ${this.threads}`);
    const hadTouched = await this.exists(TOUCHED_TABLE);
    await this.exec(setupStatements(this.parts));
    await this.exec(`CREATE TABLE IF NOT EXISTS ${d.table(MANIFESTS_TABLE)} (manifest VARCHAR NOT NULL, read_at TIMESTAMPTZ)`);
    const columns = new Set((await this.rows(columnsSql)).map((r) => `${String(r.table_name)}.${String(r.column_name)}`));
    await this.exec(plan.tables.flatMap((t) => addColumnsSql(t, (table, column) => columns.has(`${table}.${column}`))));
    if (!hadTouched) await this.seedTouched();
    await this.tables.create();

    await this.readNewDocs(true);
    await this.exec(
      `INSERT INTO ${d.temp(T.purges)} (run_id, school_id) SELECT run_id, school_id FROM ${d.table(TASKS_TABLE)} WHERE resource = ${q(PURGE_RESOURCE)}`,
    );
    if (await this.exists(LEGACY_RUNS_TABLE)) await this.migrateLegacy();
    await this.computePending();
    await this.supersede();
    if (this.opts.requirePseudonymised) await this.refuseUnpseudonymised();

    const appliedRuns: string[] = [];
    let appliedTasks = 0;
    // A run that fails to apply is rolled back whole and stops the load; the runs applied
    // before it are still merged, so the tables reflect every run up to the failure.
    let failure: unknown;
    let refreshes = 0;
    runs: for (;;) {
      const runs = (await this.rows(`SELECT run_id FROM ${ALL.pending} UNION SELECT run_id FROM ${ALL.pendingPurges} ORDER BY 1`)).map(
        (r) => String(r.run_id),
      );
      for (const runId of runs) {
        this.progress(`applying run ${runId}`);
        try {
          appliedTasks += await this.applyRun(runId);
          appliedRuns.push(runId);
        } catch (e) {
          // A compaction removed a file after this load read the manifests: the manifests
          // written since say where its rows are now.
          if (e instanceof MissingFileError && refreshes < 3 && (await this.readNewDocs(false)) > 0) {
            refreshes += 1;
            this.progress(`${e.path} was removed meanwhile (a compaction): read the manifests written since, applying again`);
            await this.computePending();
            continue runs;
          }
          failure = e;
        }
        if (failure !== undefined) break;
      }
      break;
    }
    const [unmerged] = await this.rows(
      `SELECT count(*)::BIGINT AS n, count(DISTINCT school_id)::BIGINT AS s FROM ${d.table(TASKS_TABLE)} WHERE merged_at IS NULL`,
    );
    if (Number(unmerged?.n ?? 0) > 0) {
      await this.merge();
      this.progress(`merged ${Number(unmerged?.n)} task(s) of ${Number(unmerged?.s)} school(s) into ${plan.tables.length} table(s)`);
    } else {
      this.progress('no new tasks to apply');
    }
    await this.recordDocsDone();
    if (failure !== undefined) throw failure;
    const counted = await this.rows(
      plan.tables.map((t, i) => `SELECT ${i} AS i, count(*)::BIGINT AS n FROM ${d.table(t.name)}`).join(' UNION ALL '),
    );
    const counts: Record<string, number> = {};
    for (const [i, t] of plan.tables.entries()) counts[t.name] = Number(counted.find((r) => Number(r.i) === i)?.n ?? 0);
    return { appliedRuns, appliedTasks, tables: counts };
  }

  /**
   * Merges the touched (school, table) pairs, table by table (parents first), each table's schools
   * in batches of about MERGE_ROWS staged rows, each batch in its own transaction: memory follows
   * the batch, not the number of schools (a batch merged twice after a crash gives the same
   * state). The tasks are marked merged, and the touched pairs cleared, once every batch is in.
   */
  private async merge(): Promise<void> {
    const batchTable = '_se_touched_batch';
    for (const [t, schools] of await this.schoolsToMerge()) {
      const rows = await schools();
      if (rows.length === 0) continue;
      for (const batch of batchesOf(rows, this.opts.mergeRows ?? MERGE_ROWS)) {
        await this.exec(`CREATE OR REPLACE TEMP TABLE ${batchTable} (school_id VARCHAR, table_name VARCHAR)`);
        const a = await this.conn.createAppender(batchTable);
        for (const id of batch) {
          a.appendVarchar(id);
          a.appendVarchar(t.name);
          a.endRow();
        }
        a.closeSync();
        const scope = { touched: batchTable };
        await this.transaction(() =>
          this.exec([mergeStatement(this.plan, t, d, scope), ...(this.opts.keepHistory ? [] : compactTable(this.plan, t, d, scope))]),
        );
      }
    }
    await this.transaction(() => this.exec([...(this.opts.keepHistory ? [] : [snapshotCleanup(d)]), ...markMergedStatements(d)]));
  }

  /**
   * The tables to merge (parents first), each with its touched schools (a child's include its
   * parent's) and their staged rows, which size the merge batches. Few touched pairs are counted
   * by one query for every table; many (a full night of thousands of schools), table by table
   * when merged, so that one table's list is held at a time. Merging a table changes no other
   * table's staged rows, so counting them all first gives the same batches.
   */
  private async schoolsToMerge(): Promise<[TablePlan, () => Promise<Record<string, unknown>[]>][]> {
    const touched = new Map(
      (await this.rows(`SELECT table_name, count(*)::BIGINT AS n FROM ${d.table(TOUCHED_TABLE)} GROUP BY table_name`)).map((r) => [
        String(r.table_name),
        Number(r.n),
      ]),
    );
    const namesOf = (t: TablePlan): string[] => [t.name, ...(t.parent ? [t.parent.table] : [])];
    const tables = this.plan.tables.filter((t) => namesOf(t).some((n) => touched.has(n)));
    const pairs = tables.reduce((sum, t) => sum + namesOf(t).reduce((n, name) => n + (touched.get(name) ?? 0), 0), 0);
    const count = (t: TablePlan): string =>
      `SELECT ${q(t.name)} AS k, ts.school_id, count(r._school_id)::BIGINT AS n FROM (SELECT DISTINCT school_id FROM ${d.table(TOUCHED_TABLE)} ` +
      `WHERE table_name IN (${namesOf(t).map(q).join(', ')})) AS ts LEFT JOIN ${d.table(rawName(t.name))} AS r ON r._school_id = ts.school_id GROUP BY ts.school_id`;
    const schools = await listedAtOnceOrEach(
      tables.map((t) => t.name),
      pairs <= this.listAtOnce,
      async () => groupBy(await this.rows(`${tables.map(count).join(' UNION ALL ')} ORDER BY k, school_id`), (r) => String(r.k)),
      (name) => this.rows(`${count(tables.find((t) => t.name === name)!)} ORDER BY school_id`),
    );
    return tables.map((t) => [t, schools.get(t.name)!]);
  }

  private async exists(table: string): Promise<boolean> {
    const [r] = await this.rows(
      `SELECT count(*)::BIGINT AS n FROM duckdb_tables() WHERE table_name = ${q(table)} AND schema_name = 'main'`,
    );
    return Number(r?.n ?? 0) > 0;
  }

  /**
   * A database written before the merge knew which tables a task touched may hold tasks applied
   * but not merged (a crash between the two): every table of their schools is merged.
   */
  private async seedTouched(): Promise<void> {
    const names = this.plan.tables.map((t) => `SELECT ${q(t.name)} AS table_name`).join(' UNION ALL ');
    await this.exec(
      `INSERT INTO ${d.table(TOUCHED_TABLE)} SELECT DISTINCT t.school_id, k.table_name FROM ${d.table(TASKS_TABLE)} AS t ` +
        `CROSS JOIN (${names}) AS k WHERE t.merged_at IS NULL`,
    );
  }

  /**
   * Reads the manifest documents not read to the end by an earlier load, nor by this one. On
   * the first call, documents recorded as read that are gone (parts a run rewrote at its end)
   * are forgotten. Returns how many were read.
   */
  private async readNewDocs(first: boolean): Promise<number> {
    const listed = this.firstListing ?? (await listDocs(this.opts.sink));
    this.firstListing = undefined;
    await this.exec(`CREATE OR REPLACE TEMP TABLE _se_listed (manifest VARCHAR)`);
    const a = await this.conn.createAppender('_se_listed');
    for (const doc of listed) {
      a.appendVarchar(doc.path);
      a.endRow();
    }
    a.closeSync();
    if (first) {
      await this.exec(
        `DELETE FROM ${d.table(MANIFESTS_TABLE)} AS m WHERE NOT EXISTS (SELECT 1 FROM _se_listed AS l WHERE l.manifest = m.manifest)`,
      );
    }
    const unread = (
      await this.rows(
        `SELECT l.manifest FROM _se_listed AS l WHERE NOT EXISTS (SELECT 1 FROM ${d.table(MANIFESTS_TABLE)} AS m WHERE m.manifest = l.manifest)`,
      )
    )
      .map((r) => docOf(String(r.manifest)))
      .filter((doc): doc is ManifestDoc => doc !== undefined && !this.read.has(doc.path))
      .sort(compareDocs);
    if (unread.length) this.progress(`reading ${unread.length} manifest document(s)`);
    await this.tables.read(this.opts.sink, unread, (doc) => this.read.add(doc.path));
    return unread.length;
  }

  /**
   * The pending tasks, files and purges of the whole load (nightly.ts), kept aside: each run takes
   * its share (applyBatch makes the batch's own from them). Renamed, not copied: at 10,000 schools
   * a copy held another ~250,000 rows at once.
   */
  private async computePending(): Promise<void> {
    await this.exec(pendingStatements(this.parts));
    const aside: [string, string][] = [
      [T.pending, ASIDE.pending],
      [T.pendingFiles, ASIDE.pendingFiles],
      [T.pendingPurges, ASIDE.pendingPurges],
    ];
    // RENAME TO takes the bare name (the table stays in its database)
    await this.exec(
      aside.flatMap(([from, to]) => [`DROP TABLE IF EXISTS ${d.temp(to)}`, `ALTER TABLE ${d.temp(from)} RENAME TO ${d.ident(to)}`]),
    );
  }

  /**
   * Records the --supersede requests (all checked first: a task of a pending run that wrote the
   * table, a later full read of its school's resource), then refuses rows of SUPERSEDED_TABLE
   * that no later full read justifies (a user's INSERT), before anything is applied.
   */
  private async supersede(): Promise<void> {
    const tables = { tasks: d.temp(T.tasks), files: d.temp(T.files), pending: ALL.pending };
    const key = (r: Record<string, unknown>): string => `${String(r.run_id)}/${String(r.school_id)}/${String(r.table_name)}`;
    const requests = this.opts.supersede ?? [];
    if (requests.length > 0) {
      await this.exec('CREATE OR REPLACE TEMP TABLE _se_supersede (run_id VARCHAR, school_id VARCHAR, table_name VARCHAR)');
      const a = await this.conn.createAppender('_se_supersede');
      for (const r of requests) {
        a.appendVarchar(r.runId);
        a.appendVarchar(r.schoolId);
        a.appendVarchar(r.table);
        a.endRow();
      }
      a.closeSync();
      const recorded = new Set((await this.rows(`SELECT run_id, school_id, table_name FROM ${d.table(SUPERSEDED_TABLE)}`)).map(key));
      const found = new Map((await this.rows(supersededPending(d, tables, '_se_supersede'))).map((r) => [key(r), r]));
      const fresh: SupersededTask[] = [];
      for (const r of requests) {
        const id = `${r.runId}/${r.schoolId}/${r.table}`;
        if (recorded.has(id)) {
          this.progress(`${id} is superseded already (${SUPERSEDED_TABLE})`);
          continue;
        }
        const f = found.get(id);
        if (!f)
          throw new ConfigError(
            `--supersede ${id}: no pending task of run ${r.runId} at school ${r.schoolId} wrote ${r.table} (loaded already, or in no manifest): nothing to supersede`,
            'E_USAGE',
          );
        if (f.by_run === null) throw new ConfigError(noLaterFullRead(r, String(f.resource)), 'E_USAGE');
        fresh.push(r);
      }
      if (fresh.length > 0) {
        await this.transaction(() =>
          this.exec(
            `INSERT INTO ${d.table(SUPERSEDED_TABLE)} (run_id, school_id, table_name, superseded_at, superseded_by) ` +
              `SELECT run_id, school_id, table_name, now(), by_run FROM (${supersededPending(d, tables, '_se_supersede')}) AS s ` +
              `WHERE NOT EXISTS (SELECT 1 FROM ${d.table(SUPERSEDED_TABLE)} AS x WHERE x.run_id = s.run_id AND x.school_id = s.school_id AND x.table_name = s.table_name)`,
          ),
        );
        for (const r of fresh) {
          const f = found.get(`${r.runId}/${r.schoolId}/${r.table}`)!;
          this.progress(
            `superseded ${r.runId}/${r.schoolId}/${r.table}: its ${r.table} files are not loaded (full read in run ${String(f.by_run)})`,
          );
        }
        await this.computePending();
      }
    }
    const [bad] = await this.rows(
      `SELECT * FROM (${supersededPending(d, tables, d.table(SUPERSEDED_TABLE))}) AS s WHERE by_run IS NULL ORDER BY run_id, school_id, table_name LIMIT 1`,
    );
    if (bad) {
      const task = { runId: String(bad.run_id), schoolId: String(bad.school_id), table: String(bad.table_name) };
      throw new ConfigError(`${noLaterFullRead(task, String(bad.resource))} (a row of ${SUPERSEDED_TABLE} names it); nothing was loaded`);
    }
  }

  private async refuseUnpseudonymised(): Promise<void> {
    const bad = (await this.rows(`SELECT DISTINCT run_id FROM ${ALL.pending} WHERE pseudonymised = 0 ORDER BY 1`)).map((r) =>
      String(r.run_id),
    );
    if (bad.length === 0) return;
    throw new ExportError(
      'E_POLICY',
      `--require-pseudonymised: run ${bad[0]}${bad.length > 1 ? ` (and ${bad.length - 1} more)` : ''} was not pseudonymised ` +
        '(its manifest has no personal_data policy with person_id: pseudonymise); nothing was loaded',
    );
  }

  /** Records the tasks of documents the old loader applied, with their purges, then drops its table. */
  private async migrateLegacy(): Promise<void> {
    const same = ['run_id', 'school_id', 'resource', 'seq'].map((k) => `a.${k} = t.${k}`).join(' AND ');
    await this.transaction(() =>
      this.exec([
        `INSERT INTO ${d.table(TASKS_TABLE)} SELECT t.run_id, t.school_id, t.resource, t.seq, MIN(t.manifest), MIN(t.mode), ` +
          `CASE WHEN MIN(t.mode) = 'full' AND MIN(t.piece_final) = 1 THEN MIN(t.snapshot) END, now(), now() ` +
          `FROM ${d.temp(T.tasks)} AS t JOIN ${d.temp(T.docs)} AS dd ON dd.manifest = t.manifest ` +
          `JOIN ${d.table(LEGACY_RUNS_TABLE)} AS l ON l.run_id = dd.legacy_key ` +
          `WHERE t.status = 'committed' AND NOT EXISTS (SELECT 1 FROM ${d.table(TASKS_TABLE)} AS a WHERE ${same}) ` +
          `GROUP BY t.run_id, t.school_id, t.resource, t.seq`,
        `INSERT INTO ${d.table(TASKS_TABLE)} SELECT DISTINCT p.run_id, p.school_id, ${q(PURGE_RESOURCE)}, 0, NULL, NULL, NULL, now(), now() ` +
          `FROM ${d.temp(T.purges)} AS p WHERE p.run_id IN (SELECT run_id FROM ${d.table(LEGACY_RUNS_TABLE)}) AND NOT EXISTS (` +
          `SELECT 1 FROM ${d.table(TASKS_TABLE)} AS a WHERE a.run_id = p.run_id AND a.school_id = p.school_id AND a.resource = ${q(PURGE_RESOURCE)})`,
        `DROP TABLE ${d.table(LEGACY_RUNS_TABLE)}`,
      ]),
    );
  }

  /**
   * One run's share of the pending work, its schools in batches of about BATCH_ROWS rows (a
   * school's tasks of a run are never split), each batch staged, checked and recorded in one
   * transaction: a task's rows are staged exactly when its key is recorded, as when a load meets
   * a run still going. Returns the tasks applied.
   */
  private async applyRun(runId: string): Promise<number> {
    const r = q(runId);
    const schools = await this.rows(
      `SELECT s.school_id, COALESCE(SUM(f.row_count), 0)::BIGINT AS n FROM (SELECT school_id FROM ${ALL.pending} WHERE run_id = ${r} ` +
        `UNION SELECT school_id FROM ${ALL.pendingPurges} WHERE run_id = ${r}) AS s LEFT JOIN ${ALL.pendingFiles} AS f ` +
        `ON f.school_id = s.school_id AND f.run_id = ${r} AND f.keep = 1 GROUP BY s.school_id ORDER BY s.school_id`,
    );
    let applied = 0;
    for (const batch of batchesOf(schools, this.opts.batchRows ?? BATCH_ROWS)) applied += await this.applyBatch(runId, batch);
    return applied;
  }

  private async applyBatch(runId: string, batch: string[]): Promise<number> {
    const r = q(runId);
    await this.exec(`CREATE OR REPLACE TEMP TABLE _se_batch (school_id VARCHAR)`);
    const a = await this.conn.createAppender('_se_batch');
    for (const id of batch) {
      a.appendVarchar(id);
      a.endRow();
    }
    a.closeSync();
    const mine = `run_id = ${r} AND school_id IN (SELECT school_id FROM _se_batch)`;
    await this.exec([
      d.createTemp(T.pending, `SELECT * FROM ${ALL.pending} WHERE ${mine}`),
      // a compacted file holding rows of this batch is staged whole and counted whole; only this batch's rows are kept
      d.createTemp(
        T.pendingFiles,
        `SELECT table_name, path, sha256, row_count, run_id, school_id, CASE WHEN ${mine} THEN keep ELSE 0 END AS keep ` +
          `FROM ${ALL.pendingFiles} WHERE path IN (SELECT path FROM ${ALL.pendingFiles} WHERE ${mine} AND keep = 1)`,
      ),
      d.createTemp(T.pendingPurges, `SELECT * FROM ${ALL.pendingPurges} WHERE ${mine}`),
    ]);
    // the staging tables are TEMP (duckdb-stage.ts): not in the scratch database
    const staged = (t: { name: string }): string => base.temp(stageName(t.name));
    const one = (t: TablePlan): NightlyParts => ({ ...this.parts, plan: { tables: [t] } });
    // Staged and checked first, outside the transaction (temporary tables spill to disk beyond the
    // memory limit; rows inserted inside a transaction stay in memory until it commits); then the
    // run's rows and records go in at once. Tables without files in this run stage nothing (the
    // deletions stage is read by the record, empty or not).
    const { byTable: withFiles, atOnce } = await this.pendingFilesByTable();
    const stagedTables = this.plan.tables.filter((t) => withFiles.has(t.name) || t === this.plan.deletions);
    // Statements that would change nothing are not sent (about 50 a batch): the first load's
    // rebuild once tasks are recorded, purges and the dropping of other tasks' rows when there are none.
    const [found] = await this.rows(
      `SELECT EXISTS (SELECT 1 FROM ${d.table(TASKS_TABLE)}) AS applied, EXISTS (SELECT 1 FROM ${d.temp(T.pendingPurges)}) AS purges, ` +
        `EXISTS (SELECT 1 FROM ${d.temp(T.pendingFiles)} WHERE keep = 0) AS unkept`,
    );
    const absent: Absent = { purges: found?.purges === false, unkeptRows: found?.unkept === false };
    try {
      for (const t of stagedTables) {
        await this.exec(`CREATE OR REPLACE TEMP TABLE ${staged(t)} AS SELECT * FROM ${d.table(rawName(t.name))} WHERE 1 = 0`);
        const files = withFiles.get(t.name);
        if (!files) continue;
        try {
          await this.stageTable(runId, t, await files());
        } catch (e) {
          if (e instanceof StageFailure) throw await this.explain(e);
          // a file that changed after its run (checksum) or cannot be read: say whose it is
          if (e instanceof ExportError && !(e instanceof MissingFileError))
            throw await this.stuck(e.message.replace(/^[^ ]+ /, ''), e.message.split(' ')[0]!, t, e);
          throw e;
        }
        // a big batch checks each table as it is staged (one statement over every table was 5-10% slower at 2,000 schools)
        if (!atOnce) await this.checked(() => this.exec(stagedCountStatements(one(t), staged, absent)));
      }
      if (atOnce) {
        const withRows = { ...this.parts, plan: { ...this.plan, tables: stagedTables.filter((t) => withFiles.has(t.name)) } };
        await this.checked(() => this.exec(stagedCountCheckedAtOnce(withRows, staged, absent)));
      }
      await this.transaction(async () => {
        if (found?.applied !== true) await this.exec(rebuildStatements(this.parts));
        for (const t of stagedTables) await this.exec(appendStatements(one(t), staged));
        await this.exec(recordStatements(this.parts, staged, absent));
      });
    } finally {
      for (const t of stagedTables) await this.exec(`DROP TABLE IF EXISTS ${staged(t)}`);
    }
    const [n] = await this.rows(`SELECT count(*)::BIGINT AS n FROM ${d.temp(T.pending)}`);
    return Number(n?.n ?? 0);
  }

  /**
   * The batch's pending files by table, with the sizes the manifests record (the longest line
   * sizes the readers' limits). A batch of few files is listed by one query (and its staged rows
   * checked by one statement: atOnce); a big one (a full night of thousands of schools) table by
   * table, when staged, so that only one table's list is held at a time.
   */
  private async pendingFilesByTable(): Promise<{ byTable: Map<string, () => Promise<PendingFile[]>>; atOnce: boolean }> {
    const counts = await this.rows(
      `SELECT table_name, count(DISTINCT path)::BIGINT AS n FROM ${d.temp(T.pendingFiles)} GROUP BY table_name`,
    );
    const atOnce = counts.reduce((sum, r) => sum + Number(r.n), 0) <= this.listAtOnce;
    const byTable = await listedAtOnceOrEach(
      counts.map((r) => String(r.table_name)),
      atOnce,
      async () => groupBy(await this.listPendingFiles(), (f) => f.table),
      (table) => this.listPendingFiles(table),
    );
    return { byTable, atOnce };
  }

  /** Pending files of the batch (of one table), with their sizes from the manifests. */
  private async listPendingFiles(table?: string): Promise<(PendingFile & { table: string })[]> {
    const only = table === undefined ? '' : ` WHERE table_name = ${q(table)}`;
    const listed = await this.rows(
      `SELECT p.table_name, p.path, p.sha256, max(f.bytes)::BIGINT AS bytes, max(f.max_line_bytes)::BIGINT AS max_line FROM ` +
        `(SELECT DISTINCT table_name, path, sha256 FROM ${d.temp(T.pendingFiles)}${only}) AS p ` +
        `LEFT JOIN ${d.temp(T.files)} AS f ON f.path = p.path GROUP BY p.table_name, p.path, p.sha256 ORDER BY p.table_name, p.path`,
    );
    return listed.map((r) => ({
      table: String(r.table_name),
      path: String(r.path),
      sha256: r.sha256 === null ? '' : String(r.sha256),
      bytes: r.bytes === null ? null : Number(r.bytes),
      maxLineBytes: r.max_line === null ? null : Number(r.max_line),
    }));
  }

  /** The table's pending files of this run, staged by one statement per batch of files of one format. */
  private async stageTable(runId: string, t: TablePlan, listed: PendingFile[]): Promise<void> {
    const byKind = groupBy(listed, (f) => {
      const kind = readerKind(f.path);
      if (!kind) throw new ExportError('E_STATE', `${f.path}: unknown file type (expected .ndjson, .ndjson.gz, .csv or .parquet)`);
      return kind;
    });
    const size = this.opts.filesPerStatement ?? 200;
    for (const group of byKind.values()) {
      for (let i = 0; i < group.length; i += size) await this.stageBatch(runId, t, group.slice(i, i + size));
    }
  }

  private async stageBatch(runId: string, t: TablePlan, batch: PendingFile[]): Promise<void> {
    const limit = pLimit(8);
    const local = await Promise.all(batch.map((f) => limit(() => this.files.get(f))));
    try {
      // the local copies, with the sizes the manifests record of the files
      const files = local.map((l, i) => ({ ...batch[i]!, path: l.path }));
      await this.opts.beforeStage?.({ runId, table: t.name, paths: batch.map((f) => f.path) });
      const into = stageName(t.name);
      const kind = readerKind(batch[0]!.path)!;
      try {
        await this.reading(kind, files, async () => {
          if (kind.startsWith('ndjson')) return this.exec(stageNdjsonSql(t, into, files));
          const format = kind.startsWith('csv') ? 'csv' : 'parquet';
          const present = new Set((await this.rows(describeSql(format, files))).map((r) => String(r.column_name)));
          await this.exec(stageByNameSql(t, into, format, files, present));
        });
      } catch (e) {
        // A file removed after it was checked (a compaction meanwhile) reads as an I/O error.
        const gone = batch.find((f) => this.opts.sink.localPath && !existsSync(this.opts.sink.localPath(f.path)));
        if (gone) throw new MissingFileError(gone.path);
        throw new StageFailure(t, batch, e);
      }
    } finally {
      await Promise.all(local.map((l) => l.release()));
    }
  }

  /** A check that fails raises DuckDB's error(): its message is the check's. */
  private async checked(body: () => Promise<void>): Promise<void> {
    try {
      await body();
    } catch (e) {
      const m = /school-export: .*/.exec(e instanceof Error ? e.message : String(e));
      throw m ? new ExportError('E_STATE', m[0].replace(/^school-export: /, '')) : e;
    }
  }

  /** Which file of a batch DuckDB refused, read alone (after the run was rolled back). */
  private async explain(f: StageFailure): Promise<ExportError> {
    for (const file of f.batch) {
      const local = await this.files.get(file).catch(() => undefined);
      if (!local) continue;
      try {
        const kind = readerKind(file.path)!;
        const one = [{ ...file, path: local.path }];
        await this.reading(kind, one, async () => {
          const sql = kind.startsWith('ndjson')
            ? selectNdjsonSql(f.table, one)
            : selectByNameSql(
                f.table,
                kind.startsWith('csv') ? 'csv' : 'parquet',
                one,
                new Set((await this.rows(describeSql(kind.startsWith('csv') ? 'csv' : 'parquet', one))).map((r) => String(r.column_name))),
              );
          await this.rows(`SELECT count(*) AS n FROM (${sql}) AS x`);
        });
      } catch (e) {
        return await this.stuck(`DuckDB refused it: ${e instanceof Error ? e.message : String(e)}`, file.path, f.table, e);
      } finally {
        await local.release();
      }
    }
    const cause = f.cause instanceof Error ? f.cause.message : String(f.cause);
    return new ExportError('E_STATE', `loading ${f.batch.length} file(s) into ${f.table.name} failed: ${cause}`, { cause: f.cause });
  }

  /**
   * A pending task that cannot be loaded: which run, school and table, why, and what to do. The
   * load stops at that run (the runs before it are applied and merged); loads after it stop there
   * too until the file loads.
   */
  private async stuck(why: string, path: string, t: TablePlan, cause: unknown): Promise<ExportError> {
    const [task] = await this.rows(
      `SELECT run_id, school_id, resource FROM ${d.temp(T.files)} WHERE path = ${q(path)} ORDER BY run_id DESC LIMIT 1`,
    );
    const run = String(task?.run_id ?? '?');
    const school = String(task?.school_id ?? '?');
    const resource = String(task?.resource ?? t.name);
    return new ExportError(
      'E_STATE',
      `run ${run}, school ${school}, table ${t.name}: ${path} cannot be loaded (${oneLine(why).slice(0, 400)}); ` +
        `the runs before ${run} are loaded, this run and later ones are not: restore the file as run ${run} wrote it ` +
        `(its manifest records its sha256 and rows; task ${resource}) and load again, or ${fullRefreshHint(school, resource).replace(/ first$/, '')}, ` +
        `then load with --supersede ${run}/${school}/${t.name}`,
      { cause },
    );
  }

  /** Documents none of whose entries is still pending (nor a purge, nor a compacted file's source) are not read again. */
  private async recordDocsDone(): Promise<void> {
    await this.exec(pendingStatements(this.parts));
    const same = (a: string, b: string): string =>
      ['run_id', 'school_id', 'resource', 'seq'].map((k) => `${a}.${k} = ${b}.${k}`).join(' AND ');
    await this.exec(
      `INSERT INTO ${d.table(MANIFESTS_TABLE)} SELECT dd.manifest, now() FROM ${d.temp(T.docs)} AS dd WHERE ` +
        `NOT EXISTS (SELECT 1 FROM ${d.temp(T.tasks)} AS t JOIN ${d.temp(T.pending)} AS p ON ${same('t', 'p')} WHERE t.manifest = dd.manifest) ` +
        `AND NOT EXISTS (SELECT 1 FROM ${d.temp(T.tasks)} AS t JOIN ${d.temp(T.sources)} AS s ON ${same('s', 't')} ` +
        `JOIN ${d.temp(T.pending)} AS p ON p.run_id = s.source_run AND p.school_id = s.school_id AND p.resource = s.resource AND p.seq = s.source_seq ` +
        `WHERE t.manifest = dd.manifest) ` +
        `AND NOT EXISTS (SELECT 1 FROM ${d.temp(T.pendingPurges)} AS pp JOIN ${d.temp(T.purges)} AS pu ON pu.run_id = pp.run_id AND pu.school_id = pp.school_id ` +
        `WHERE pu.manifest = dd.manifest)`,
    );
  }

  private async transaction(body: () => Promise<void>): Promise<void> {
    await this.conn.run('BEGIN TRANSACTION');
    try {
      await body();
      await this.conn.run('COMMIT');
    } catch (e) {
      await this.conn.run('ROLLBACK').catch(() => {});
      throw e;
    }
  }
}

/** A pending file as staging reads it: where, its checksum, and the sizes its manifest records. */
interface PendingFile extends FileSize {
  sha256: string;
}

/** DuckDB refused a batch of files (a value that does not fit its column, a file it cannot read). */
class StageFailure extends Error {
  constructor(
    readonly table: TablePlan,
    readonly batch: PendingFile[],
    override readonly cause: unknown,
  ) {
    super(cause instanceof Error ? cause.message : String(cause));
  }
}
