import { ddlStatements, mergeAndCompact, purgeStatements } from './merge-sql.ts';
import { DELETIONS_TABLE, MASKED_TABLE, PURGE_RESOURCE, SNAPSHOTS_TABLE, TASKS_TABLE, rawName, type Plan, type TablePlan } from './plan.ts';
import type { SqlDialect } from './sql-dialect.ts';

/**
 * The static load script every dialect runs, rendered once and run after every export: the
 * warehouse reads the manifests itself, works out which committed tasks it has not applied yet
 * (by task key, never by run order), stages exactly their files, checks the row counts, and
 * applies them in one transaction. Its size depends on the tables, never on schools or runs.
 *
 * Each dialect supplies where the manifest documents come from and how a list of files becomes
 * staged rows (BigQuery LOAD DATA, Snowflake COPY, DuckDB read_parquet, each by dynamic SQL over
 * the pending file list); everything between is this file's shared SQL.
 */

/** Temporary tables of one load. */
export const T = {
  docs: '_se_docs',
  tasks: '_se_tasks',
  files: '_se_files',
  purges: '_se_purges',
  masked: '_se_masked',
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

/**
 * The manifest tables of this load. `docs` is a query of (manifest, doc): one row per manifest
 * file (a run's manifest or a part of it), doc its JSON.
 */
export function manifestStatements({ plan, d }: NightlyParts, docs: string): string[] {
  const j = d.json;
  const c = (n: string): string => d.ident(n);
  const task = j.each('d.doc', ['tasks'], 't');
  const file = j.each('t.task', ['files'], 'f');
  const purge = j.each('d.doc', ['purged'], 'p');
  const identity = ['run_id', 'school_id', 'resource', 'seq'].map((k) => `t.${c(k)}`).join(', ');
  return [
    d.createTemp(T.docs, docs),
    d.createTemp(
      T.tasks,
      `SELECT d.${c('manifest')} AS ${c('manifest')}, ${j.str('d.doc', ['run_id'])} AS ${c('run_id')}, ` +
        `CASE WHEN ${j.str('d.doc', ['personal_data', 'person_id'])} = 'pseudonymise' THEN 1 ELSE 0 END AS ${c('pseudonymised')}, ` +
        `${j.str(task.value, ['school_id'])} AS ${c('school_id')}, ${j.str(task.value, ['resource'])} AS ${c('resource')}, ` +
        `${j.str(task.value, ['status'])} AS ${c('status')}, ${j.str(task.value, ['mode'])} AS ${c('mode')}, ` +
        // A checkpoint piece: its own key; a full read's snapshot applies from its final piece only.
        `COALESCE(${j.int(task.value, ['checkpoint', 'seq'])}, 0) AS ${c('seq')}, ` +
        `CASE WHEN ${j.str(task.value, ['checkpoint', 'final'])} = 'false' THEN 0 ELSE 1 END AS ${c('piece_final')}, ` +
        `COALESCE(${j.str(task.value, ['checkpoint', 'snapshot'])}, ${j.str('d.doc', ['run_id'])}) AS ${c('snapshot')}, ` +
        `${task.value} AS ${c('task')} FROM ${d.temp(T.docs)} AS d${task.from}`,
    ),
    d.createTemp(
      T.files,
      `SELECT ${identity}, ${j.str(file.value, ['table'])} AS ${c('table_name')}, ${j.str(file.value, ['path'])} AS ${c('path')}, ` +
        `${j.int(file.value, ['rows'])} AS ${c('row_count')} FROM ${d.temp(T.tasks)} AS t${file.from}`,
    ),
    // A purge with before_run (files a weaker personal-data policy wrote) counts from that run.
    d.createTemp(
      T.purges,
      `SELECT COALESCE(${j.str(purge.value, ['before_run'])}, ${j.str('d.doc', ['run_id'])}) AS ${c('run_id')}, ${j.str(purge.value, ['school_id'])} AS ${c('school_id')} ` +
        `FROM ${d.temp(T.docs)} AS d${purge.from}`,
    ),
    // scope_masked maps table -> columns: one unnest per known table keeps the text bounded.
    d.createTemp(
      T.masked,
      plan.tables
        .map((tb) => {
          const col = j.each('t.task', ['scope_masked', tb.name], 'mc');
          return (
            `SELECT ${identity}, ${d.str(tb.name)} AS ${c('table_name')}, ${j.str(col.value, [])} AS ${c('column_name')} ` +
            `FROM ${d.temp(T.tasks)} AS t${col.from}`
          );
        })
        .join(' UNION ALL '),
    ),
    d.createTemp(T.known, plan.tables.map((tb) => `SELECT ${d.str(tb.name)} AS ${c('table_name')}`).join(' UNION ALL ')),
  ];
}

/** What this load applies: committed tasks not applied yet, and not from before a purge of their school. */
export function pendingStatements({ d }: NightlyParts): string[] {
  const c = (n: string): string => d.ident(n);
  const sameTask = (a: string, b: string): string =>
    ['run_id', 'school_id', 'resource', 'seq'].map((k) => `${a}.${c(k)} = ${b}.${c(k)}`).join(' AND ');
  return [
    d.createTemp(
      T.pending,
      `SELECT t.${c('run_id')}, t.${c('school_id')}, t.${c('resource')}, t.${c('seq')}, MIN(t.${c('manifest')}) AS ${c('manifest')}, ` +
        `MIN(t.${c('mode')}) AS ${c('mode')}, MIN(t.${c('piece_final')}) AS ${c('piece_final')}, MIN(t.${c('snapshot')}) AS ${c('snapshot')}, ` +
        `MIN(t.${c('pseudonymised')}) AS ${c('pseudonymised')} FROM ${d.temp(T.tasks)} AS t WHERE t.${c('status')} = 'committed' ` +
        `AND NOT EXISTS (SELECT 1 FROM ${d.table(TASKS_TABLE)} AS a WHERE ${sameTask('a', 't')}) ` +
        `AND NOT EXISTS (SELECT 1 FROM ${d.temp(T.purges)} AS p WHERE p.${c('school_id')} = t.${c('school_id')} AND t.${c('run_id')} < p.${c('run_id')}) ` +
        `GROUP BY t.${c('run_id')}, t.${c('school_id')}, t.${c('resource')}, t.${c('seq')}`,
    ),
    // Files of tables not being loaded are left out, as `warehouse load` skips them.
    d.createTemp(
      T.pendingFiles,
      `SELECT DISTINCT f.${c('table_name')}, f.${c('path')}, f.${c('row_count')}, f.${c('run_id')}, f.${c('school_id')} ` +
        `FROM ${d.temp(T.files)} AS f JOIN ${d.temp(T.pending)} AS t ON ${sameTask('f', 't')} ` +
        `JOIN ${d.temp(T.known)} AS k ON k.${c('table_name')} = f.${c('table_name')}`,
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
 * After staging: every (table, run, school) holds exactly the rows the manifests list for the
 * pending files. A file changed after its run committed (other rows, or another school's or
 * run's rows) fails the load before anything is applied.
 */
export function stagedCountStatements({ plan, d }: NightlyParts, stage: (t: TablePlan) => string): string[] {
  const c = (n: string): string => d.ident(n);
  return plan.tables.map((t) =>
    d.failIf(
      `SELECT COALESCE(e.${c('run_id')}, s.${c('_run_id')}) AS ${c('run_id')}, COALESCE(e.${c('school_id')}, s.${c('_school_id')}) AS ${c('school_id')}, ` +
        `COALESCE(e.${c('n')}, 0) AS ${c('expected')}, COALESCE(s.${c('n')}, 0) AS ${c('staged')} FROM ` +
        `(SELECT ${c('run_id')}, ${c('school_id')}, SUM(${c('row_count')}) AS ${c('n')} FROM ${d.temp(T.pendingFiles)} ` +
        `WHERE ${c('table_name')} = ${d.str(t.name)} GROUP BY ${c('run_id')}, ${c('school_id')}) AS e FULL OUTER JOIN ` +
        `(SELECT ${c('_run_id')}, ${c('_school_id')}, COUNT(*) AS ${c('n')} FROM ${stage(t)} GROUP BY ${c('_run_id')}, ${c('_school_id')}) AS s ` +
        `ON s.${c('_run_id')} = e.${c('run_id')} AND s.${c('_school_id')} = e.${c('school_id')} ` +
        `WHERE COALESCE(e.${c('n')}, 0) <> COALESCE(s.${c('n')}, 0)`,
      `'school-export: ${t.name} files of run ' || ${c('run_id')} || ', school ' || ${c('school_id')} || ' hold ' || CAST(${c('staged')} AS ${d.rawType('string')}) || ' rows, the manifests list ' || CAST(${c('expected')} AS ${d.rawType('string')}) || ': a file changed after its run committed; nothing was loaded'`,
      `school-export: staged ${t.name} rows do not match the row counts the manifests list (a file changed after its run committed); nothing was loaded`,
    ),
  );
}

/** The DML of one load, meant to run in one transaction after staging. */
export function applyStatements({ plan, d }: NightlyParts, stage: (t: TablePlan) => string): string[] {
  const c = (n: string): string => d.ident(n);
  const firstLoad = `NOT EXISTS (SELECT 1 FROM ${d.table(TASKS_TABLE)})`;
  const sameTask = (a: string, b: string): string =>
    ['run_id', 'school_id', 'resource', 'seq'].map((k) => `${a}.${c(k)} = ${b}.${c(k)}`).join(' AND ');
  const snapshotTables =
    `SELECT p.${c('snapshot')} AS ${c('run_id')}, p.${c('school_id')}, k.${c('table_name')} FROM ${d.temp(T.pending)} AS p ` +
    `JOIN ${d.temp(T.known)} AS k ON k.${c('table_name')} = p.${c('resource')} WHERE p.${c('mode')} = 'full' AND p.${c('piece_final')} = 1 ` +
    `UNION ALL SELECT p.${c('snapshot')}, p.${c('school_id')}, f.${c('table_name')} FROM ${d.temp(T.pending)} AS p ` +
    `JOIN ${d.temp(T.files)} AS f ON ${sameTask('f', 'p')} JOIN ${d.temp(T.known)} AS k ON k.${c('table_name')} = f.${c('table_name')} ` +
    `WHERE p.${c('mode')} = 'full' AND p.${c('piece_final')} = 1`;
  return [
    // The first load by task keys rebuilds everything from the manifests: a warehouse loaded by
    // the old run-ordered script may lack runs it never loaded, or hold rows of files no
    // manifest lists. Staged rows of this load are in the stage tables, not yet in raw.
    ...plan.tables.flatMap((t) => [rawName(t.name), t.name].map((n) => `DELETE FROM ${d.table(n)} WHERE ${firstLoad}`)),
    ...[SNAPSHOTS_TABLE, MASKED_TABLE].map((n) => `DELETE FROM ${d.table(n)} WHERE ${firstLoad}`),
    ...plan.tables.map((t) => {
      const cols = t.columns.map((col) => c(col.name)).join(', ');
      return `INSERT INTO ${d.table(rawName(t.name))} (${cols}) SELECT ${cols} FROM ${stage(t)}`;
    }),
    ...purgeStatements(plan, d, `SELECT ${c('run_id')}, ${c('school_id')} FROM ${d.temp(T.pendingPurges)}`),
    `INSERT INTO ${d.table(SNAPSHOTS_TABLE)} (${c('run_id')}, ${c('school_id')}, ${c('table_name')}) ` +
      `SELECT DISTINCT x.${c('run_id')}, x.${c('school_id')}, x.${c('table_name')} FROM (${snapshotTables}) AS x ` +
      `WHERE x.${c('table_name')} <> ${d.str(DELETIONS_TABLE)}`,
    `INSERT INTO ${d.table(MASKED_TABLE)} (${c('run_id')}, ${c('school_id')}, ${c('table_name')}, ${c('column_name')}) ` +
      `SELECT DISTINCT m.${c('run_id')}, m.${c('school_id')}, m.${c('table_name')}, m.${c('column_name')} FROM ${d.temp(T.masked)} AS m ` +
      `JOIN ${d.temp(T.pending)} AS p ON ${sameTask('m', 'p')}`,
    `INSERT INTO ${d.table(TASKS_TABLE)} (${['run_id', 'school_id', 'resource', 'seq', 'manifest', 'mode', 'snapshot', 'applied_at', 'merged_at'].map(c).join(', ')}) ` +
      `SELECT ${c('run_id')}, ${c('school_id')}, ${c('resource')}, ${c('seq')}, ${c('manifest')}, ${c('mode')}, ` +
      `CASE WHEN ${c('mode')} = 'full' AND ${c('piece_final')} = 1 THEN ${c('snapshot')} END, ${d.now}, NULL FROM ${d.temp(T.pending)} ` +
      `UNION ALL SELECT ${c('run_id')}, ${c('school_id')}, ${d.str(PURGE_RESOURCE)}, 0, NULL, NULL, NULL, ${d.now}, NULL FROM ${d.temp(T.pendingPurges)}`,
    ...mergeAndCompact(plan, d),
  ];
}

/** Setup every load repeats harmlessly: tables created when missing. */
export function setupStatements({ plan, d }: NightlyParts): string[] {
  return ddlStatements(plan, d);
}
