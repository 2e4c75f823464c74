import { ddlStatements, mergeAndCompact, purgeStatements } from './merge-sql.ts';
import {
  DELETIONS_TABLE,
  GUARDED_TABLE,
  MASKED_TABLE,
  PURGE_RESOURCE,
  SNAPSHOTS_TABLE,
  SUPERSEDED_TABLE,
  TASKS_TABLE,
  TOUCHED_TABLE,
  rawName,
  type Plan,
  type TablePlan,
} from './plan.ts';
import type { SqlDialect } from './sql-dialect.ts';
import { notSuperseded, supersededPending } from './supersede.ts';

/**
 * The static load script every dialect runs, rendered once and run after every export: the
 * warehouse reads the manifests itself, works out which committed tasks it has not applied yet
 * (by task key, never by run order), stages exactly their files, checks the row counts, and
 * applies them in one transaction. Its size depends on the tables, never on schools or runs.
 *
 * Each dialect supplies where the manifest documents come from and how a list of files becomes
 * staged rows (BigQuery LOAD DATA, Snowflake COPY, DuckDB read_parquet, each by dynamic SQL over
 * the pending file list); everything between is this file's shared SQL. `warehouse load` runs
 * the same statements from pendingStatements on, over manifest tables it fills itself (it
 * reads only the manifests it has not read to the end), one run at a time.
 *
 * The manifest tables (one load's temporary tables): `tasks` (every entry: run, school,
 * resource, seq, status, mode, piece_final, snapshot, since (an unchanged read's unchanged_since),
 * manifest, pseudonymised), `files` (each
 * entry's files: table, path, rows, sha256), `purges`, `masked` and `guarded` (an entry's
 * scope_masked and scope_guarded columns), `sources` (what each compacted file holds: the
 * source file, its run and seq and rows), `known` (the plan's tables).
 */

/** Temporary tables of one load. */
export const T = {
  docs: '_se_docs',
  tasks: '_se_tasks',
  files: '_se_files',
  purges: '_se_purges',
  masked: '_se_masked',
  guarded: '_se_guarded',
  sources: '_se_sources',
  moved: '_se_moved',
  known: '_se_known',
  pending: '_se_pending',
  pendingFiles: '_se_pending_files',
  pendingPurges: '_se_pending_purges',
} as const;

export const stageName = (table: string): string => `_stage_${table}`;

/** Relative data paths as the pipeline writes them: segments never '.', '..' or hidden. */
export const SAFE_PATH_PATTERN = '([A-Za-z0-9_=-][A-Za-z0-9_=.-]*/)*[A-Za-z0-9_=-][A-Za-z0-9_=.-]*';

export interface NightlyParts {
  plan: Plan;
  d: SqlDialect;
  requirePseudonymised: boolean;
}

/** The statuses of entries a load applies: files of a read, or nothing to do (an unchanged full read). */
export const APPLIED_STATUSES = ['committed', 'unchanged'] as const;

/**
 * The manifest tables of this load. `docs` is a query of (manifest, doc): one row per manifest
 * file (a run manifest or a part), doc its JSON. A run manifest of this layout has no entries:
 * only its parts add rows.
 */
export function manifestStatements({ plan, d }: NightlyParts, docs: string): string[] {
  const j = d.json;
  const c = (n: string): string => d.ident(n);
  const task = j.each('d.doc', ['tasks'], 't');
  const file = j.each('t.task', ['files'], 'f');
  const purge = j.each('d.doc', ['purged'], 'p');
  const source = j.each('t.task', ['compaction', 'sources'], 'cs');
  const identity = ['run_id', 'school_id', 'resource', 'seq'].map((k) => `t.${c(k)}`).join(', ');
  const perTable = (key: string, alias: string): string =>
    plan.tables
      .map((tb) => {
        const col = j.each('t.task', [key, tb.name], alias);
        return (
          `SELECT ${identity}, ${d.str(tb.name)} AS ${c('table_name')}, ${j.str(col.value, [])} AS ${c('column_name')} ` +
          `FROM ${d.temp(T.tasks)} AS t${col.from}`
        );
      })
      .join(' UNION ALL ');
  return [
    d.createTemp(T.docs, docs),
    d.createTemp(
      T.tasks,
      `SELECT d.${c('manifest')} AS ${c('manifest')}, ${j.str('d.doc', ['run_id'])} AS ${c('run_id')}, ` +
        `CASE WHEN ${j.str('d.doc', ['personal_data', 'person_id'])} = 'pseudonymise' THEN 1 ELSE 0 END AS ${c('pseudonymised')}, ` +
        `${j.str(task.value, ['school_id'])} AS ${c('school_id')}, ${j.str(task.value, ['resource'])} AS ${c('resource')}, ` +
        `${j.str(task.value, ['status'])} AS ${c('status')}, ${j.str(task.value, ['mode'])} AS ${c('mode')}, ` +
        // A checkpoint piece: its own key; a full read's snapshot applies from its final piece
        // only, and never from an unchanged read (it read nothing new: nothing is gone).
        `COALESCE(${j.int(task.value, ['checkpoint', 'seq'])}, 0) AS ${c('seq')}, ` +
        `CASE WHEN ${j.str(task.value, ['checkpoint', 'final'])} = 'false' OR ${j.str(task.value, ['status'])} <> 'committed' THEN 0 ELSE 1 END AS ${c('piece_final')}, ` +
        `COALESCE(${j.str(task.value, ['checkpoint', 'snapshot'])}, ${j.str('d.doc', ['run_id'])}) AS ${c('snapshot')}, ` +
        `${j.str(task.value, ['unchanged_since'])} AS ${c('since')}, ${task.value} AS ${c('task')} FROM ${d.temp(T.docs)} AS d${task.from}`,
    ),
    d.createTemp(
      T.files,
      `SELECT ${identity}, ${j.str(file.value, ['table'])} AS ${c('table_name')}, ${j.str(file.value, ['path'])} AS ${c('path')}, ` +
        `${j.int(file.value, ['rows'])} AS ${c('row_count')}, ${j.str(file.value, ['sha256'])} AS ${c('sha256')} FROM ${d.temp(T.tasks)} AS t${file.from}`,
    ),
    // A purge with before_run (files a weaker personal-data policy wrote) counts from that run.
    d.createTemp(
      T.purges,
      `SELECT COALESCE(${j.str(purge.value, ['before_run'])}, ${j.str('d.doc', ['run_id'])}) AS ${c('run_id')}, ${j.str(purge.value, ['school_id'])} AS ${c('school_id')} ` +
        `FROM ${d.temp(T.docs)} AS d${purge.from}`,
    ),
    // scope_masked and scope_guarded map table -> columns: one unnest per known table keeps the text bounded.
    d.createTemp(T.masked, perTable('scope_masked', 'mc')),
    d.createTemp(T.guarded, perTable('scope_guarded', 'gc')),
    d.createTemp(
      T.sources,
      `SELECT ${identity}, ${j.str(source.value, ['path'])} AS ${c('source_path')}, ${j.str(source.value, ['run_id'])} AS ${c('source_run')}, ` +
        `COALESCE(${j.int(source.value, ['seq'])}, 0) AS ${c('source_seq')}, ${j.int(source.value, ['rows'])} AS ${c('row_count')} ` +
        `FROM ${d.temp(T.tasks)} AS t${source.from} WHERE t.${c('status')} = 'compacted'`,
    ),
  ];
}

/**
 * What this load applies: committed (and unchanged) tasks not applied yet, and not from before
 * a purge of their school; the files to stage for them (a file a compaction replaced is read
 * from the compacted file: all of it is staged and counted, and only the rows of the pending
 * (run, school) pairs are kept, `keep`); the purges not applied yet.
 */
export function pendingStatements({ plan, d }: NightlyParts): string[] {
  const c = (n: string): string => d.ident(n);
  const sameTask = (a: string, b: string): string =>
    ['run_id', 'school_id', 'resource', 'seq'].map((k) => `${a}.${c(k)} = ${b}.${c(k)}`).join(' AND ');
  const statuses = APPLIED_STATUSES.map((x) => d.str(x)).join(', ');
  // sources of compacted files that belong to pending tasks
  const pendingSources =
    `SELECT DISTINCT m2.${c('source_path')}, m2.${c('path')} FROM ${d.temp(T.moved)} AS m2 JOIN ${d.temp(T.files)} AS f ON f.${c('path')} = m2.${c('source_path')} ` +
    `JOIN ${d.temp(T.pending)} AS t ON ${sameTask('f', 't')} WHERE ${notSuperseded(d, `f.${c('run_id')}`, `f.${c('school_id')}`, `f.${c('table_name')}`)}`;
  return [
    d.createTemp(T.known, plan.tables.map((tb) => `SELECT ${d.str(tb.name)} AS ${c('table_name')}`).join(' UNION ALL ')),
    // Where each source file's rows are now: the latest compaction that lists it.
    d.createTemp(
      T.moved,
      `SELECT x.${c('source_path')}, x.${c('source_run')} AS ${c('run_id')}, x.${c('school_id')}, x.${c('row_count')}, ` +
        `f.${c('table_name')}, f.${c('path')}, f.${c('sha256')} FROM (SELECT s.*, ROW_NUMBER() OVER (PARTITION BY s.${c('source_path')} ` +
        `ORDER BY s.${c('run_id')} DESC, s.${c('seq')} DESC) AS ${c('_rn')} FROM ${d.temp(T.sources)} AS s) AS x ` +
        `JOIN ${d.temp(T.files)} AS f ON ${sameTask('f', 'x')} WHERE x.${c('_rn')} = 1`,
    ),
    d.createTemp(
      T.pending,
      `SELECT t.${c('run_id')}, t.${c('school_id')}, t.${c('resource')}, t.${c('seq')}, MIN(t.${c('manifest')}) AS ${c('manifest')}, ` +
        `MIN(t.${c('mode')}) AS ${c('mode')}, MIN(t.${c('piece_final')}) AS ${c('piece_final')}, MIN(t.${c('snapshot')}) AS ${c('snapshot')}, ` +
        `MIN(t.${c('pseudonymised')}) AS ${c('pseudonymised')} FROM ${d.temp(T.tasks)} AS t WHERE t.${c('status')} IN (${statuses}) ` +
        `AND NOT EXISTS (SELECT 1 FROM ${d.table(TASKS_TABLE)} AS a WHERE ${sameTask('a', 't')}) ` +
        `AND NOT EXISTS (SELECT 1 FROM ${d.temp(T.purges)} AS p WHERE p.${c('school_id')} = t.${c('school_id')} AND t.${c('run_id')} < p.${c('run_id')}) ` +
        `GROUP BY t.${c('run_id')}, t.${c('school_id')}, t.${c('resource')}, t.${c('seq')}`,
    ),
    // Files of tables not being loaded are left out, as `warehouse load` skips them.
    d.createTemp(
      T.pendingFiles,
      `SELECT DISTINCT f.${c('table_name')}, f.${c('path')}, f.${c('sha256')}, f.${c('row_count')}, f.${c('run_id')}, f.${c('school_id')}, 1 AS ${c('keep')} ` +
        `FROM ${d.temp(T.files)} AS f JOIN ${d.temp(T.pending)} AS t ON ${sameTask('f', 't')} ` +
        `JOIN ${d.temp(T.known)} AS k ON k.${c('table_name')} = f.${c('table_name')} ` +
        `WHERE NOT EXISTS (SELECT 1 FROM ${d.temp(T.moved)} AS mv WHERE mv.${c('source_path')} = f.${c('path')}) ` +
        // a superseded task's files of that table are left out (supersede.ts)
        `AND ${notSuperseded(d, `f.${c('run_id')}`, `f.${c('school_id')}`, `f.${c('table_name')}`)} ` +
        `UNION ALL SELECT mv.${c('table_name')}, mv.${c('path')}, mv.${c('sha256')}, SUM(mv.${c('row_count')}), mv.${c('run_id')}, mv.${c('school_id')}, ` +
        `MAX(CASE WHEN ps.${c('source_path')} IS NULL THEN 0 ELSE 1 END) FROM ${d.temp(T.moved)} AS mv ` +
        `JOIN ${d.temp(T.known)} AS k ON k.${c('table_name')} = mv.${c('table_name')} ` +
        `LEFT JOIN (${pendingSources}) AS ps ON ps.${c('source_path')} = mv.${c('source_path')} ` +
        `WHERE mv.${c('path')} IN (SELECT ps2.${c('path')} FROM (${pendingSources}) AS ps2) ` +
        `GROUP BY mv.${c('table_name')}, mv.${c('path')}, mv.${c('sha256')}, mv.${c('run_id')}, mv.${c('school_id')}`,
    ),
    d.createTemp(
      T.pendingPurges,
      `SELECT DISTINCT p.${c('run_id')}, p.${c('school_id')} FROM ${d.temp(T.purges)} AS p WHERE NOT EXISTS (` +
        `SELECT 1 FROM ${d.table(TASKS_TABLE)} AS a WHERE a.${c('run_id')} = p.${c('run_id')} AND a.${c('school_id')} = p.${c('school_id')} ` +
        `AND a.${c('resource')} = ${d.str(PURGE_RESOURCE)})`,
    ),
  ];
}

/** Refusals before anything is staged: unsafe paths (they become SQL text), non-Parquet files, the personal-data policy. */
export function checkStatements({ d, requirePseudonymised }: NightlyParts): string[] {
  const c = (n: string): string => d.ident(n);
  const f = `${d.temp(T.pendingFiles)}`;
  const out = [
    d.failIf(
      `SELECT ${c('run_id')}, ${c('path')} FROM ${f} WHERE NOT (${d.fullMatch(c('path'), SAFE_PATH_PATTERN)}) ` +
        `OR SUBSTR(${c('path')}, 1, LENGTH(${c('table_name')}) + 1) <> ${c('table_name')} || '/'`,
      `'school-export: the manifest of run ' || ${c('run_id')} || ' lists an unsafe or misplaced file path; nothing was loaded'`,
      'school-export: a manifest lists an unsafe or misplaced file path; nothing was loaded',
    ),
    d.failIf(
      `SELECT ${c('run_id')}, ${c('path')} FROM ${f} WHERE SUBSTR(${c('path')}, LENGTH(${c('path')}) - 7) <> '.parquet'`,
      `'school-export: run ' || ${c('run_id')} || ' wrote ' || ${c('path')} || ': this load reads Parquet; export with --format parquet (or load with warehouse load)'`,
      'school-export: a pending task wrote files that are not Parquet; export with --format parquet (or load with warehouse load)',
    ),
  ];
  // A superseded task with no later full read of its school's resource: superseding it would lose data.
  const unjustified = `SELECT * FROM (${supersededPending(d, { tasks: d.temp(T.tasks), files: d.temp(T.files), pending: d.temp(T.pending) }, d.table(SUPERSEDED_TABLE))}) AS sp WHERE sp.${c('by_run')} IS NULL`;
  out.push(
    d.failIf(
      unjustified,
      `'school-export: ' || ${c('run_id')} || '/' || ${c('school_id')} || '/' || ${c('table_name')} || ' (${SUPERSEDED_TABLE}): no later full read of ' || ` +
        `${c('table_name')} || ' at ' || ${c('school_id')} || ': run school-export run --full-refresh --schools ' || ${c('school_id')} || ' --resources ' || ${c('resource')} || ' first; nothing was loaded'`,
      `school-export: a row of ${SUPERSEDED_TABLE} names a task with no later full read of its table at its school: run school-export run --full-refresh for that school and resource first; nothing was loaded`,
    ),
  );
  if (requirePseudonymised) {
    out.push(
      d.failIf(
        `SELECT ${c('run_id')} FROM ${d.temp(T.pending)} WHERE ${c('pseudonymised')} = 0`,
        `'school-export: run ' || ${c('run_id')} || ' was not pseudonymised (its manifest has no personal_data policy with person_id: pseudonymise); nothing was loaded'`,
        'school-export: a pending run was not pseudonymised (no personal_data policy with person_id: pseudonymise); nothing was loaded',
      ),
    );
  }
  return out;
}

/** Empty staging tables shaped like the raw tables (dialects whose loader needs a real table override this). */
export function stageTableStatements({ plan, d }: NightlyParts): string[] {
  return plan.tables.map((t) => d.createTemp(stageName(t.name), `SELECT * FROM ${d.table(rawName(t.name))} WHERE 1 = 0`));
}

/**
 * What a caller has looked up and found absent from the pending work, so that statements about
 * it, which would change nothing, are not sent (`warehouse load` looks; the static scripts,
 * rendered once for every load, cannot).
 */
export interface Absent {
  /** No pending purge. */
  purges?: boolean;
  /** No pending file holds rows to leave out (`keep = 0`: a compacted file's rows of other tasks). */
  unkeptRows?: boolean;
}

/**
 * After staging: every (table, run, school) holds exactly the rows the manifests list for the
 * files staged (a compacted file: the rows of every source it holds). A file changed after its
 * run committed (other rows, or another school's or run's rows) fails the load before anything
 * is applied. Then the rows of a compacted file that belong to no pending task are dropped.
 */
export function stagedCountStatements(parts: NightlyParts, stage: (t: TablePlan) => string, absent: Absent = {}): string[] {
  const { plan, d } = parts;
  return plan.tables.flatMap((t) => [
    d.failIf(
      countMismatches(d, t, stage),
      mismatchMessage(d, t),
      `school-export: staged ${t.name} rows do not match the row counts the manifests list (a file changed after its run committed); nothing was loaded`,
    ),
    ...unkeptRowsStatements(parts, t, stage, absent),
  ]);
}

/**
 * stagedCountStatements with the checks of every table in one statement (a dialect whose error
 * text is dynamic): a small load of a dozen tables sends one check, not a dozen.
 */
export function stagedCountCheckedAtOnce(parts: NightlyParts, stage: (t: TablePlan) => string, absent: Absent = {}): string[] {
  const { plan, d } = parts;
  if (plan.tables.length === 0) return [];
  const messages = plan.tables
    .map((t) => `SELECT ${mismatchMessage(d, t)} AS ${d.ident('_message')} FROM (${countMismatches(d, t, stage)}) AS m`)
    .join(' UNION ALL ');
  return [
    d.failIf(
      messages,
      d.ident('_message'),
      'school-export: staged rows do not match the row counts the manifests list (a file changed after its run committed); nothing was loaded',
    ),
    ...plan.tables.flatMap((t) => unkeptRowsStatements(parts, t, stage, absent)),
  ];
}

/** The (run, school) pairs of a table whose staged rows differ from what the manifests list. */
function countMismatches(d: SqlDialect, t: TablePlan, stage: (t: TablePlan) => string): string {
  const c = (n: string): string => d.ident(n);
  return (
    `SELECT COALESCE(e.${c('run_id')}, s.${c('_run_id')}) AS ${c('run_id')}, COALESCE(e.${c('school_id')}, s.${c('_school_id')}) AS ${c('school_id')}, ` +
    `COALESCE(e.${c('n')}, 0) AS ${c('expected')}, COALESCE(s.${c('n')}, 0) AS ${c('staged')} FROM ` +
    `(SELECT ${c('run_id')}, ${c('school_id')}, SUM(${c('row_count')}) AS ${c('n')} FROM ${d.temp(T.pendingFiles)} ` +
    `WHERE ${c('table_name')} = ${d.str(t.name)} GROUP BY ${c('run_id')}, ${c('school_id')}) AS e FULL OUTER JOIN ` +
    `(SELECT ${c('_run_id')}, ${c('_school_id')}, COUNT(*) AS ${c('n')} FROM ${stage(t)} GROUP BY ${c('_run_id')}, ${c('_school_id')}) AS s ` +
    `ON s.${c('_run_id')} = e.${c('run_id')} AND s.${c('_school_id')} = e.${c('school_id')} ` +
    `WHERE COALESCE(e.${c('n')}, 0) <> COALESCE(s.${c('n')}, 0)`
  );
}

/** The message of a mismatch, over countMismatches' columns. */
function mismatchMessage(d: SqlDialect, t: TablePlan): string {
  const c = (n: string): string => d.ident(n);
  return `'school-export: ${t.name} files of run ' || ${c('run_id')} || ', school ' || ${c('school_id')} || ' hold ' || CAST(${c('staged')} AS ${d.rawType('string')}) || ' rows, the manifests list ' || CAST(${c('expected')} AS ${d.rawType('string')}) || ': a file changed after its run committed; nothing was loaded'`;
}

/** Rows of a compacted file that belong to no pending task leave the stage. */
function unkeptRowsStatements({ d }: NightlyParts, t: TablePlan, stage: (t: TablePlan) => string, absent: Absent): string[] {
  const c = (n: string): string => d.ident(n);
  if (absent.unkeptRows) return [];
  return [
    `DELETE FROM ${stage(t)} s WHERE NOT EXISTS (SELECT 1 FROM ${d.temp(T.pendingFiles)} AS pf WHERE pf.${c('table_name')} = ${d.str(t.name)} ` +
      `AND pf.${c('keep')} = 1 AND pf.${c('run_id')} = s.${c('_run_id')} AND pf.${c('school_id')} = s.${c('_school_id')})`,
  ];
}

/** The DML of one load, meant to run in one transaction after staging: the staged rows and what the tasks say, then the merge. */
export function applyStatements(parts: NightlyParts, stage: (t: TablePlan) => string): string[] {
  return [
    ...rebuildStatements(parts),
    ...appendStatements(parts, stage),
    ...recordStatements(parts, stage),
    ...mergeAndCompact(parts.plan, parts.d),
  ];
}

/**
 * The first load by task keys rebuilds everything from the manifests: a warehouse loaded by the
 * old run-ordered script may lack runs it never loaded, or hold rows of files no manifest
 * lists. Staged rows of this load are in the stage tables, not yet in raw.
 */
export function rebuildStatements({ plan, d }: NightlyParts): string[] {
  const firstLoad = `NOT EXISTS (SELECT 1 FROM ${d.table(TASKS_TABLE)})`;
  return [
    ...plan.tables.flatMap((t) => [rawName(t.name), t.name].map((n) => `DELETE FROM ${d.table(n)} WHERE ${firstLoad}`)),
    ...[SNAPSHOTS_TABLE, MASKED_TABLE].map((n) => `DELETE FROM ${d.table(n)} WHERE ${firstLoad}`),
  ];
}

/** The staged rows join the staged history. */
export function appendStatements({ plan, d }: NightlyParts, stage: (t: TablePlan) => string): string[] {
  return plan.tables.map((t) => {
    const cols = t.columns.map((col) => d.ident(col.name)).join(', ');
    return `INSERT INTO ${d.table(rawName(t.name))} (${cols}) SELECT ${cols} FROM ${stage(t)}`;
  });
}

/**
 * What the pending tasks say besides their rows (purges, snapshots, masked and guarded columns,
 * the (school, table) pairs the next merge recomputes, task keys): `warehouse load` runs it per
 * run, and merges once after its runs.
 */
export function recordStatements({ plan, d }: NightlyParts, stage: (t: TablePlan) => string, absent: Absent = {}): string[] {
  const c = (n: string): string => d.ident(n);
  const sameTask = (a: string, b: string): string =>
    ['run_id', 'school_id', 'resource', 'seq'].map((k) => `${a}.${c(k)} = ${b}.${c(k)}`).join(' AND ');
  const snapshotTables =
    `SELECT p.${c('snapshot')} AS ${c('run_id')}, p.${c('school_id')}, k.${c('table_name')} FROM ${d.temp(T.pending)} AS p ` +
    `JOIN ${d.temp(T.known)} AS k ON k.${c('table_name')} = p.${c('resource')} WHERE p.${c('mode')} = 'full' AND p.${c('piece_final')} = 1 ` +
    `AND ${notSuperseded(d, `p.${c('run_id')}`, `p.${c('school_id')}`, `k.${c('table_name')}`)} ` +
    `UNION ALL SELECT p.${c('snapshot')}, p.${c('school_id')}, f.${c('table_name')} FROM ${d.temp(T.pending)} AS p ` +
    `JOIN ${d.temp(T.files)} AS f ON ${sameTask('f', 'p')} JOIN ${d.temp(T.known)} AS k ON k.${c('table_name')} = f.${c('table_name')} ` +
    `WHERE p.${c('mode')} = 'full' AND p.${c('piece_final')} = 1 AND ${notSuperseded(d, `p.${c('run_id')}`, `p.${c('school_id')}`, `f.${c('table_name')}`)}`;
  return [
    ...(absent.purges ? [] : purgeStatements(plan, d, `SELECT ${c('run_id')}, ${c('school_id')} FROM ${d.temp(T.pendingPurges)}`)),
    `INSERT INTO ${d.table(SNAPSHOTS_TABLE)} (${c('run_id')}, ${c('school_id')}, ${c('table_name')}) ` +
      `SELECT DISTINCT x.${c('run_id')}, x.${c('school_id')}, x.${c('table_name')} FROM (${snapshotTables}) AS x ` +
      `WHERE x.${c('table_name')} <> ${d.str(DELETIONS_TABLE)}`,
    `INSERT INTO ${d.table(MASKED_TABLE)} (${c('run_id')}, ${c('school_id')}, ${c('table_name')}, ${c('column_name')}) ` +
      `SELECT DISTINCT m.${c('run_id')}, m.${c('school_id')}, m.${c('table_name')}, m.${c('column_name')} FROM ${d.temp(T.masked)} AS m ` +
      `JOIN ${d.temp(T.pending)} AS p ON ${sameTask('m', 'p')}`,
    // Columns named guarded by any task are guarded from now on (GUARDED_TABLE is knowledge of
    // the service, not of a run).
    `INSERT INTO ${d.table(GUARDED_TABLE)} (${c('table_name')}, ${c('column_name')}) SELECT DISTINCT g.${c('table_name')}, g.${c('column_name')} ` +
      `FROM ${d.temp(T.guarded)} AS g WHERE NOT EXISTS (SELECT 1 FROM ${d.table(GUARDED_TABLE)} AS x ` +
      `WHERE x.${c('table_name')} = g.${c('table_name')} AND x.${c('column_name')} = g.${c('column_name')})`,
    `INSERT INTO ${d.table(TOUCHED_TABLE)} (${c('school_id')}, ${c('table_name')}) SELECT DISTINCT x.${c('school_id')}, x.${c('table_name')} FROM (` +
      `SELECT pf.${c('school_id')}, pf.${c('table_name')} FROM ${d.temp(T.pendingFiles)} AS pf WHERE pf.${c('keep')} = 1 ` +
      `UNION ALL SELECT sn.${c('school_id')}, sn.${c('table_name')} FROM (${snapshotTables}) AS sn` +
      (plan.deletions
        ? ` UNION ALL SELECT dl.${c('_school_id')}, dl.${c('table')} FROM ${stage(plan.deletions)} AS dl ` +
          `JOIN ${d.temp(T.known)} AS k ON k.${c('table_name')} = dl.${c('table')}`
        : '') +
      `) AS x WHERE NOT EXISTS (SELECT 1 FROM ${d.table(TOUCHED_TABLE)} AS tt WHERE tt.${c('school_id')} = x.${c('school_id')} AND tt.${c('table_name')} = x.${c('table_name')})`,
    `INSERT INTO ${d.table(TASKS_TABLE)} (${['run_id', 'school_id', 'resource', 'seq', 'manifest', 'mode', 'snapshot', 'applied_at', 'merged_at'].map(c).join(', ')}) ` +
      `SELECT ${c('run_id')}, ${c('school_id')}, ${c('resource')}, ${c('seq')}, ${c('manifest')}, ${c('mode')}, ` +
      `CASE WHEN ${c('mode')} = 'full' AND ${c('piece_final')} = 1 THEN ${c('snapshot')} END, ${d.now}, NULL FROM ${d.temp(T.pending)} ` +
      `UNION ALL SELECT ${c('run_id')}, ${c('school_id')}, ${d.str(PURGE_RESOURCE)}, 0, NULL, NULL, NULL, ${d.now}, NULL FROM ${d.temp(T.pendingPurges)}`,
  ];
}

/** Setup every load repeats harmlessly: tables created when missing. */
export function setupStatements({ plan, d }: NightlyParts): string[] {
  return ddlStatements(plan, d);
}
