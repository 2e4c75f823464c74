import { ConfigError } from '../errors.ts';
import { isSafeId } from '../ids.ts';
import { RUN_ID_RE } from '../manifest/run-id.ts';
import { SUPERSEDED_TABLE, TASKS_TABLE } from './plan.ts';
import type { SqlDialect } from './sql-dialect.ts';

/**
 * Superseding a stuck task: a pending task whose file of one table cannot be loaded (a value the
 * warehouse refuses, a file damaged after its run) stops every load at its run. When a later
 * full read of the same school and resource exists, the current state is the same whether that
 * file loads or not (the later read's snapshot removes what the file's rows would have left, and
 * its rows are newer versions), so the task's files of that table can be left out for good. A
 * row (run, school, table) in SUPERSEDED_TABLE says so; every loader leaves those files out and
 * refuses a row no later full read justifies (docs/warehouse.md).
 *
 * "Later full read" of (school, resource) after run R: a committed full read whose final piece
 * is in the manifests (or applied) and whose snapshot (the run it began in) is after R, or an
 * unchanged full read whose content is held by files of a run after R (`unchanged_since`; one
 * whose content is R's own files justifies nothing).
 */

export interface SupersededTask {
  runId: string;
  schoolId: string;
  table: string;
}

/** RUN/SCHOOL/TABLE values (each may list several, comma-separated), checked before anything is opened. */
export function parseSupersede(values: readonly string[], tables: readonly string[]): SupersededTask[] {
  const out: SupersededTask[] = [];
  for (const v of values.flatMap((x) => x.split(',')).map((x) => x.trim())) {
    const parts = v.split('/');
    const [runId, schoolId, table] = parts;
    const bad = (why: string): ConfigError =>
      new ConfigError(
        `--supersede ${JSON.stringify(v).slice(0, 120)}: ${why} (write it RUN/SCHOOL/TABLE, as a failed load names it)`,
        'E_USAGE',
      );
    if (parts.length !== 3 || !runId || !schoolId || !table) throw bad('expected three parts');
    if (!RUN_ID_RE.test(runId)) throw bad(`${runId} is not a run id`);
    if (!isSafeId(schoolId)) throw bad(`${schoolId} is not a school id`);
    if (!tables.includes(table)) throw bad(`no table ${table}`);
    if (!out.some((o) => o.runId === runId && o.schoolId === schoolId && o.table === table)) out.push({ runId, schoolId, table });
  }
  return out;
}

/** The command to run first, in the words every loader uses. */
export const fullRefreshHint = (school: string, resource: string): string =>
  `run school-export run --full-refresh --schools ${school} --resources ${resource} first`;

/**
 * Full reads that supersede what came before them: (run_id, school_id, resource, after), where a
 * task of (school, resource) in a run before `after` is superseded. From this load's manifest
 * tables (`tasks`: status, mode, piece_final, snapshot, since) and from the tasks applied already.
 */
export function laterFullReads(d: SqlDialect, tasks: string): string {
  const c = (n: string): string => d.ident(n);
  return (
    `SELECT l.${c('run_id')}, l.${c('school_id')}, l.${c('resource')}, ` +
    `CASE WHEN l.${c('status')} = 'unchanged' THEN l.${c('since')} ELSE l.${c('snapshot')} END AS ${c('after')} FROM ${tasks} AS l ` +
    `WHERE (l.${c('status')} = 'committed' AND l.${c('mode')} = 'full' AND l.${c('piece_final')} = 1) OR l.${c('status')} = 'unchanged' ` +
    `UNION ALL SELECT a.${c('run_id')}, a.${c('school_id')}, a.${c('resource')}, a.${c('snapshot')} FROM ${d.table(TASKS_TABLE)} AS a ` +
    `WHERE a.${c('snapshot')} IS NOT NULL`
  );
}

/**
 * Each superseded (run, school, table) that names files of a pending task, with the resource
 * that wrote them and the earliest later full read justifying it (`by_run`, NULL when none).
 * `superseded`: a relation with run_id, school_id, table_name (the table, or requests).
 */
export function supersededPending(d: SqlDialect, t: { tasks: string; files: string; pending: string }, superseded: string): string {
  const c = (n: string): string => d.ident(n);
  const same = ['run_id', 'school_id', 'resource', 'seq'].map((k) => `f.${c(k)} = p.${c(k)}`).join(' AND ');
  return (
    `SELECT s.${c('run_id')}, s.${c('school_id')}, s.${c('table_name')}, MIN(f.${c('resource')}) AS ${c('resource')}, MIN(j.${c('run_id')}) AS ${c('by_run')} ` +
    `FROM ${superseded} AS s JOIN ${t.files} AS f ON f.${c('run_id')} = s.${c('run_id')} AND f.${c('school_id')} = s.${c('school_id')} ` +
    `AND f.${c('table_name')} = s.${c('table_name')} JOIN ${t.pending} AS p ON ${same} ` +
    `LEFT JOIN (${laterFullReads(d, t.tasks)}) AS j ON j.${c('school_id')} = s.${c('school_id')} AND j.${c('resource')} = f.${c('resource')} ` +
    `AND j.${c('after')} > s.${c('run_id')} GROUP BY s.${c('run_id')}, s.${c('school_id')}, s.${c('table_name')}`
  );
}

/** A condition: no row of SUPERSEDED_TABLE names (run, school, table). */
export function notSuperseded(d: SqlDialect, run: string, school: string, table: string): string {
  const c = (n: string): string => d.ident(n);
  return (
    `NOT EXISTS (SELECT 1 FROM ${d.table(SUPERSEDED_TABLE)} AS sx WHERE sx.${c('run_id')} = ${run} AND sx.${c('school_id')} = ${school} ` +
    `AND sx.${c('table_name')} = ${table})`
  );
}

/** The one line a loader refuses an unjustified supersession with (exit 2 for `warehouse load`). */
export function noLaterFullRead(task: SupersededTask, resource: string): string {
  return (
    `${task.runId}/${task.schoolId}/${task.table}: no later full read of ${task.table} at ${task.schoolId}: ` +
    fullRefreshHint(task.schoolId, resource)
  );
}
