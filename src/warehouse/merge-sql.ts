import type { SqlDialect } from './sql-dialect.ts';
import {
  GUARDED_TABLE,
  MASKED_TABLE,
  SNAPSHOTS_TABLE,
  SUPERSEDED_TABLE,
  TASKS_TABLE,
  TOUCHED_TABLE,
  rawName,
  type Plan,
  type TablePlan,
} from './plan.ts';

/**
 * DDL, MERGE and bookkeeping text shared by every dialect. The merge recomputes each key's
 * current version from the staged history (`_raw_<table>`): it is a function of the set of
 * staged rows, snapshots, deletion records and guarded columns, so applying tasks late or twice,
 * or staging again rows staged before, converges to the same state; a source row flagged
 * `_gone` removes the key from the current-state table. Only the (school, table) pairs touched
 * since the last merge are merged (a child table also where its parent was touched).
 */

export function bookkeepingDdl(d: SqlDialect): string[] {
  const s = d.rawType('string');
  const ts = d.rawType('timestamp');
  const c = (n: string): string => d.ident(n);
  return [
    // What this warehouse has applied: one row per task key (run, school, resource, checkpoint
    // piece), and per purge (resource _purge). A task is applied once, whatever order its run,
    // shard or killed run's parts committed in.
    `CREATE TABLE IF NOT EXISTS ${d.table(TASKS_TABLE)} (${c('run_id')} ${s} NOT NULL, ${c('school_id')} ${s} NOT NULL, ` +
      `${c('resource')} ${s} NOT NULL, ${c('seq')} ${d.rawType('integer')} NOT NULL, ${c('manifest')} ${s}, ${c('mode')} ${s}, ` +
      `${c('snapshot')} ${s}, ${c('applied_at')} ${ts}, ${c('merged_at')} ${ts})`,
    // One row per (full snapshot, table): rows of that school and table last seen before the
    // latest such run are gone upstream.
    `CREATE TABLE IF NOT EXISTS ${d.table(SNAPSHOTS_TABLE)} (${c('run_id')} ${s} NOT NULL, ${c('school_id')} ${s} NOT NULL, ${c('table_name')} ${s} NOT NULL)`,
    `CREATE TABLE IF NOT EXISTS ${d.table(MASKED_TABLE)} (${c('run_id')} ${s} NOT NULL, ${c('school_id')} ${s} NOT NULL, ` +
      `${c('table_name')} ${s} NOT NULL, ${c('column_name')} ${s} NOT NULL)`,
    `CREATE TABLE IF NOT EXISTS ${d.table(GUARDED_TABLE)} (${c('table_name')} ${s} NOT NULL, ${c('column_name')} ${s} NOT NULL)`,
    `CREATE TABLE IF NOT EXISTS ${d.table(TOUCHED_TABLE)} (${c('school_id')} ${s} NOT NULL, ${c('table_name')} ${s} NOT NULL)`,
    // Pending tasks' files of one table never loaded: a later full read replaced them
    // (supersede.ts). superseded_by: that read's run (NULL when a user's INSERT leaves it out).
    `CREATE TABLE IF NOT EXISTS ${d.table(SUPERSEDED_TABLE)} (${c('run_id')} ${s} NOT NULL, ${c('school_id')} ${s} NOT NULL, ` +
      `${c('table_name')} ${s} NOT NULL, ${c('superseded_at')} ${ts}, ${c('superseded_by')} ${s})`,
  ];
}

export function tableDdl(t: TablePlan, d: SqlDialect): string[] {
  const cols = (final: boolean): string =>
    t.columns
      .map((c) => {
        const type = final ? d.finalType(c.type) : d.rawType(c.type);
        // Only metadata columns are NOT NULL in raw tables: a scope can null any declared field.
        const notNull = c.name.startsWith('_') && !c.nullable && (final || d.rawNotNull) ? ' NOT NULL' : '';
        return `${d.ident(c.name)} ${type}${notNull}`;
      })
      .join(', ');
  const opts = (kind: 'raw' | 'final'): string => {
    const o = d.tableOptions(t, kind);
    return o ? ` ${o}` : '';
  };
  return [
    `CREATE TABLE IF NOT EXISTS ${d.table(rawName(t.name))} (${cols(false)})${opts('raw')}`,
    `CREATE TABLE IF NOT EXISTS ${d.table(t.name)} (${cols(true)})${opts('final')}`,
  ];
}

export function ddlStatements(plan: Plan, d: SqlDialect): string[] {
  return [...bookkeepingDdl(d), ...plan.tables.flatMap((t) => tableDdl(t, d))];
}

/**
 * Schools whose rows of `t` the merge recomputes: touched in `t` since the last merge, or, for a
 * child table, in its parent (a parent's new version without children drops the old ones).
 */
export function touchedSchools(t: TablePlan, d: SqlDialect, touched?: string): string {
  const tables = [t.name, ...(t.parent ? [t.parent.table] : [])].map((n) => d.str(n)).join(', ');
  return `SELECT ${d.ident('school_id')} FROM ${touched ?? d.table(TOUCHED_TABLE)} WHERE ${d.ident('table_name')} IN (${tables})`;
}

/** Where the touched (school, table) pairs are read from: TOUCHED_TABLE, or a batch of them (`warehouse load`). */
export interface MergeScope {
  touched?: string;
}

/** The version order of raw rows, latest first. */
function versionOrder(t: TablePlan, d: SqlDialect, alias: string): string {
  return t.versionOrder.map((c) => `${alias}.${d.ident(c)} ${d.descNullsLast}`).join(', ');
}

/**
 * `g.cols`: ',col,col,' the columns of `t` a task named guarded or masked (NULL when none did),
 * as one row to join to every raw row.
 */
function guardedJoin(t: TablePlan, d: SqlDialect): string {
  const c = (n: string): string => d.ident(n);
  const named = [GUARDED_TABLE, MASKED_TABLE]
    .map((n) => `SELECT x.${c('column_name')} FROM ${d.table(n)} AS x WHERE x.${c('table_name')} = ${d.str(t.name)}`)
    .join(' UNION ALL ');
  return ` CROSS JOIN (SELECT ',' || ${d.stringAgg(`gc.${c('column_name')}`, ',')} || ',' AS cols FROM (${named}) AS gc) AS g`;
}

/** Whether `column` is guarded by a property scope: declared (static), or named by a task (or the property it was flattened from). */
function guardedFlag(t: TablePlan, column: string, d: SqlDialect): string {
  if (t.guarded.includes(column)) return '1 = 1';
  const parts = column.split('__');
  const names = parts.map((_, i) => parts.slice(0, i + 1).join('__'));
  return `(g.cols IS NOT NULL AND (${names.map((n) => d.contains('g.cols', d.str(`,${n},`))).join(' OR ')}))`;
}

const filled = (column: string): string => `_filled__${column}`;

/**
 * The raw rows of the touched schools, each with `_filled__<column>` per maskable column: in a
 * column guarded by a property scope, the latest non-null value of the same version (school,
 * key, updated_at), so a null never replaces a value of the same version (a token without the
 * scope reads it as null, whatever the exporter detected), while a newer version replaces it as
 * usual; in other columns the row's own value. One window (one sort) serves every column.
 */
function rawRows(t: TablePlan, d: SqlDialect, scope: MergeScope): string {
  const c = (n: string): string => d.ident(n);
  const touched = `WHERE r.${c('_school_id')} IN (${touchedSchools(t, d, scope.touched)})`;
  if (t.maskable.length === 0) return `(SELECT r.* FROM ${d.table(rawName(t.name))} AS r ${touched})`;
  const version =
    `PARTITION BY ${partitionBy(t, d, 'r')}, r.${c('updated_at')} ORDER BY r.${c('_extracted_at')} ${d.descNullsLast}, ` +
    `r.${c('_run_id')} ${d.descNullsLast} ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING`;
  return (
    `(SELECT r.*, ${t.maskable
      .map(
        (col) =>
          `CASE WHEN ${guardedFlag(t, col, d)} THEN ${d.firstNonNull(`r.${c(col)}`, version)} ELSE r.${c(col)} END AS ${c(filled(col))}`,
      )
      .join(', ')} ` + `FROM ${d.table(rawName(t.name))} AS r${guardedJoin(t, d)} ${touched})`
  );
}

const partitionBy = (t: TablePlan, d: SqlDialect, alias: string): string =>
  ['_school_id', ...t.key].map((c) => `${alias}.${d.ident(c)}`).join(', ');

/** The latest deletion record per (school, table, id): a restoration updates the same record. */
function latestDeletions(plan: Plan, t: TablePlan, d: SqlDialect): string {
  const del = plan.deletions;
  if (!del) throw new Error('latestDeletions without a deletions table');
  const c = (n: string): string => d.ident(n);
  return (
    `SELECT dl.${c('_school_id')}, dl.${c('id')}, dl.${c('deleted_at')}, dl.${c('restored_at')}, dl.${c('_extracted_at')} FROM (` +
    `SELECT x.${c('_school_id')}, x.${c('table')}, x.${c('id')}, x.${c('deleted_at')}, x.${c('restored_at')}, x.${c('_extracted_at')}, ` +
    `ROW_NUMBER() OVER (PARTITION BY x.${c('_school_id')}, x.${c('table')}, x.${c('id')} ORDER BY ${versionOrder(del, d, 'x')}) AS ${c('_rn')} ` +
    `FROM ${d.table(rawName(del.name))} AS x WHERE x.${c('table')} = ${d.str(t.name)}` +
    `) AS dl WHERE dl.${c('_rn')} = 1`
  );
}

/** The merge source of a top-level table: each key's latest version and whether it is gone. */
function topLevelSource(plan: Plan, t: TablePlan, d: SqlDialect, scope: MergeScope): string {
  const c = (n: string): string => d.ident(n);
  const gone = [
    `(snap.${c('run_id')} IS NOT NULL AND v.${c('_last_run')} < snap.${c('run_id')})`,
    ...(t.appliesDeletions
      ? [
          `(del.${c('deleted_at')} IS NOT NULL AND (del.${c('restored_at')} IS NULL OR del.${c('restored_at')} < del.${c('deleted_at')})` +
            ` AND del.${c('deleted_at')} >= ${t.versionOrder[0] === 'updated_at' ? `COALESCE(v.${c('updated_at')}, v.${c('_extracted_at')})` : `v.${c('_extracted_at')}`}` +
            // A row read again after the deletion was recorded exists upstream (a snapshot-detected
            // deletion of a row that came back carries no restored_at).
            ` AND v.${c('_last_seen')} <= del.${c('_extracted_at')})`,
        ]
      : []),
  ].join(' OR ');
  return (
    `SELECT ${selectList(t, d, 'v')}, (${gone}) AS ${c('_gone')} FROM (` +
    `SELECT r.*, ROW_NUMBER() OVER (PARTITION BY ${partitionBy(t, d, 'r')} ORDER BY ${versionOrder(t, d, 'r')}) AS ${c('_rn')}, ` +
    `MAX(r.${c('_run_id')}) OVER (PARTITION BY ${partitionBy(t, d, 'r')}) AS ${c('_last_run')}, ` +
    `MAX(r.${c('_extracted_at')}) OVER (PARTITION BY ${partitionBy(t, d, 'r')}) AS ${c('_last_seen')} ` +
    `FROM ${rawRows(t, d, scope)} AS r) AS v ` +
    `LEFT JOIN (SELECT s.${c('school_id')}, MAX(s.${c('run_id')}) AS ${c('run_id')} FROM ${d.table(SNAPSHOTS_TABLE)} AS s ` +
    `WHERE s.${c('table_name')} = ${d.str(t.name)} GROUP BY s.${c('school_id')}) AS snap ON snap.${c('school_id')} = v.${c('_school_id')} ` +
    (t.appliesDeletions
      ? `LEFT JOIN (${latestDeletions(plan, t, d)}) AS del ON del.${c('_school_id')} = v.${c('_school_id')} AND del.${c('id')} = v.${c('id')} `
      : '') +
    `WHERE v.${c('_rn')} = 1`
  );
}

/**
 * The merge source of a child table: per key, prefer a row staged with its parent's current
 * version (same school, parent id and _run_id); a key without one is gone.
 */
function childSource(t: TablePlan, d: SqlDialect, scope: MergeScope): string {
  const parent = t.parent;
  if (!parent) throw new Error('childSource without a parent');
  const c = (n: string): string => d.ident(n);
  return (
    `SELECT ${selectList(t, d, 'v')}, (v.${c('_parent_run')} IS NULL) AS ${c('_gone')} FROM (` +
    `SELECT r.*, p.${c('_run_id')} AS ${c('_parent_run')}, ROW_NUMBER() OVER (PARTITION BY ${partitionBy(t, d, 'r')} ` +
    `ORDER BY CASE WHEN p.${c('_run_id')} IS NULL THEN 1 ELSE 0 END, ${versionOrder(t, d, 'r')}) AS ${c('_rn')} ` +
    `FROM ${d.table(rawName(t.name))} AS r LEFT JOIN ${d.table(parent.table)} AS p ` +
    `ON p.${c('_school_id')} = r.${c('_school_id')} AND p.${c('id')} = r.${c(parent.column)} AND p.${c('_run_id')} = r.${c('_run_id')} ` +
    `WHERE r.${c('_school_id')} IN (${touchedSchools(t, d, scope.touched)})` +
    `) AS v WHERE v.${c('_rn')} = 1`
  );
}

function selectList(t: TablePlan, d: SqlDialect, alias: string): string {
  return t.columns
    .map((col) => {
      const source = t.maskable.includes(col.name) ? filled(col.name) : col.name;
      return `${d.finalValue(`${alias}.${d.ident(source)}`, col.type)} AS ${d.ident(col.name)}`;
    })
    .join(', ');
}

/** The source query alone: tests parse it where a SQL parser cannot parse MERGE. */
export function mergeSource(plan: Plan, t: TablePlan, d: SqlDialect, scope: MergeScope = {}): string {
  return t.parent ? childSource(t, d, scope) : topLevelSource(plan, t, d, scope);
}

export function mergeStatement(plan: Plan, t: TablePlan, d: SqlDialect, scope: MergeScope = {}): string {
  const c = (n: string): string => d.ident(n);
  const on = ['_school_id', ...t.key].map((k) => `tgt.${c(k)} IS NOT DISTINCT FROM src.${c(k)}`).join(' AND ');
  const cols = t.columns.map((col) => c(col.name));
  const keyCols = new Set(['_school_id', ...t.key]);
  const updated = t.columns.filter((col) => !keyCols.has(col.name)).map((col) => c(col.name));
  return [
    `MERGE INTO ${d.table(t.name)} AS tgt`,
    `USING (${mergeSource(plan, t, d, scope)}) AS src`,
    `ON ${on}`,
    `WHEN MATCHED AND src.${c('_gone')} THEN DELETE`,
    `WHEN MATCHED THEN UPDATE SET ${updated.map((n) => `${n} = src.${n}`).join(', ')}`,
    `WHEN NOT MATCHED AND NOT src.${c('_gone')} THEN INSERT (${cols.join(', ')}) VALUES (${cols.map((n) => `src.${n}`).join(', ')})`,
  ].join('\n');
}

/** Merges in dependency order: a child's source reads its parent's merged current state. */
export function mergeStatements(plan: Plan, d: SqlDialect): string[] {
  return plan.tables.map((t) => mergeStatement(plan, t, d));
}

/**
 * Keeps the staged history bounded: per key, only the rows the merge can still pick (the latest
 * version, and the rows of the last run that saw the key, which decide snapshot removal), child
 * rows staged with a kept parent row, and the latest snapshot per (school, table). The merge
 * over the compacted history gives the same result as over the full history, also when a task
 * committed earlier is applied late. Deletion records are small and kept whole. Rows are named
 * by (key, _run_id, _extracted_at, updated_at), so the statements need no row ids.
 */
export function compactStatements(plan: Plan, d: SqlDialect): string[] {
  return [
    ...plan.tables.filter((t) => !t.parent).flatMap((t) => compactTable(plan, t, d)),
    ...plan.tables.filter((t) => t.parent).flatMap((t) => compactTable(plan, t, d)),
    snapshotCleanup(d),
  ];
}

/** The raw compaction of one table (a child table after its parent's). */
export function compactTable(plan: Plan, t: TablePlan, d: SqlDialect, scope: MergeScope = {}): string[] {
  const c = (n: string): string => d.ident(n);
  const touchedIn = (): string => touchedSchools(t, d, scope.touched);
  if (t === plan.deletions) return [];
  if (t.parent) {
    return [
      `DELETE FROM ${d.table(rawName(t.name))} r WHERE r.${c('_school_id')} IN (${touchedIn()}) AND NOT EXISTS (` +
        `SELECT 1 FROM ${d.table(rawName(t.parent.table))} AS p ` +
        `WHERE p.${c('_school_id')} = r.${c('_school_id')} AND p.${c('id')} = r.${c(t.parent.column)} AND p.${c('_run_id')} = r.${c('_run_id')})`,
    ];
  }
  const hasUpdatedAt = t.versionOrder[0] === 'updated_at';
  const ident = [...t.key, '_run_id', '_extracted_at', ...(hasUpdatedAt ? ['updated_at'] : [])];
  const raw = d.table(rawName(t.name));
  const same = (k: string): string => `k.${c(k)} IS NOT DISTINCT FROM r.${c(k)}`;
  // Rows of the latest version that supply a guarded column's value: per column, the latest
  // row of that version where it is not null (usually the latest row itself; a handful
  // otherwise, never one per night).
  const supply = t.maskable.length > 0;
  const group = `${partitionBy(t, d, 'x')}, x.${c('updated_at')}`;
  const cols = ['_school_id', ...ident, ...(supply ? t.maskable.filter((col) => !ident.includes(col)) : [])];
  const inner =
    `SELECT ${cols.map((k) => `x.${c(k)}`).join(', ')}, ` +
    `ROW_NUMBER() OVER (PARTITION BY ${partitionBy(t, d, 'x')} ORDER BY ${versionOrder(t, d, 'x')}) AS ${c('_rn')}, ` +
    `MAX(x.${c('_run_id')}) OVER (PARTITION BY ${partitionBy(t, d, 'x')}) AS ${c('_last_run')}` +
    (supply
      ? `, ROW_NUMBER() OVER (PARTITION BY ${group} ORDER BY x.${c('_extracted_at')} ${d.descNullsLast}, x.${c('_run_id')} ${d.descNullsLast}) AS ${c('_o')}, ` +
        `MAX(x.${c('updated_at')}) OVER (PARTITION BY ${partitionBy(t, d, 'x')}) AS ${c('_latest')}`
      : '') +
    ` FROM ${raw} AS x WHERE x.${c('_school_id')} IN (${touchedIn()})`;
  const kept = supply
    ? `SELECT y.*, ${t.maskable.map((col) => `MIN(CASE WHEN y.${c(col)} IS NOT NULL THEN y.${c('_o')} END) OVER (PARTITION BY ${partitionBy(t, d, 'y')}, y.${c('updated_at')}) AS ${c(`_b__${col}`)}`).join(', ')} FROM (${inner}) AS y`
    : inner;
  const keep = [
    `k.${c('_rn')} = 1`,
    `k.${c('_run_id')} = k.${c('_last_run')}`,
    ...(supply
      ? [
          `((${t.maskable.map((col) => `k.${c('_o')} = k.${c(`_b__${col}`)}`).join(' OR ')}) AND ` +
            `(k.${c('updated_at')} = k.${c('_latest')} OR (k.${c('updated_at')} IS NULL AND k.${c('_latest')} IS NULL)))`,
        ]
      : []),
  ].join(' OR ');
  return [
    `DELETE FROM ${raw} r WHERE r.${c('_school_id')} IN (${touchedIn()}) AND NOT EXISTS (` +
      `SELECT 1 FROM (${kept}) AS k ` +
      `WHERE (${keep}) AND k.${c('_school_id')} = r.${c('_school_id')} AND ${ident.map(same).join(' AND ')})`,
  ];
}

/** Only the latest snapshot per (school, table) decides removals. */
export function snapshotCleanup(d: SqlDialect): string {
  const c = (n: string): string => d.ident(n);
  return (
    `DELETE FROM ${d.table(SNAPSHOTS_TABLE)} s WHERE s.${c('run_id')} < (SELECT MAX(x.${c('run_id')}) FROM ${d.table(SNAPSHOTS_TABLE)} AS x ` +
    `WHERE x.${c('school_id')} = s.${c('school_id')} AND x.${c('table_name')} = s.${c('table_name')})`
  );
}

/**
 * A purge (access revoked) removes every row of the school staged from runs that started
 * before it, from every current-state and raw table. `purges` is a query of (run_id, school_id).
 */
export function purgeStatements(plan: Plan, d: SqlDialect, purges: string): string[] {
  const c = (n: string): string => d.ident(n);
  return plan.tables.flatMap((t) =>
    [rawName(t.name), t.name].map(
      (name) =>
        `DELETE FROM ${d.table(name)} r WHERE EXISTS (SELECT 1 FROM (${purges}) AS p ` +
        `WHERE p.${c('school_id')} = r.${c('_school_id')} AND r.${c('_run_id')} < p.${c('run_id')})`,
    ),
  );
}

/** The touched tasks and (school, table) pairs are merged: the next merge starts from nothing. */
export function markMergedStatements(d: SqlDialect): string[] {
  return [
    `UPDATE ${d.table(TASKS_TABLE)} SET ${d.ident('merged_at')} = ${d.now} WHERE ${d.ident('merged_at')} IS NULL`,
    `DELETE FROM ${d.table(TOUCHED_TABLE)} WHERE 1 = 1`,
  ];
}

/** Everything after staging: merge the touched schools, compact their history, mark them merged. */
export function mergeAndCompact(plan: Plan, d: SqlDialect, opts: { keepHistory?: boolean } = {}): string[] {
  return [...mergeStatements(plan, d), ...(opts.keepHistory ? [] : compactStatements(plan, d)), ...markMergedStatements(d)];
}
