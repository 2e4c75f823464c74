import type { Dialect } from './dialects.ts';
import { RUNS_TABLE, SNAPSHOTS_TABLE, rawName, type Plan, type TablePlan } from './plan.ts';

/**
 * DDL and MERGE text shared by every dialect. The merge recomputes each key's current version
 * from the staged history (`_raw_<table>`), so applying runs late or twice converges to the same
 * state; a source row flagged `_gone` removes the key from the current-state table.
 */

export function bookkeepingDdl(d: Dialect): string[] {
  const s = d.rawType('string');
  return [
    `CREATE TABLE IF NOT EXISTS ${d.table(RUNS_TABLE)} (${d.ident('run_id')} ${s} NOT NULL, ${d.ident('manifest')} ${s}, ${d.ident('applied_at')} ${d.rawType('timestamp')}, ${d.ident('merged_at')} ${d.rawType('timestamp')})`,
    // One row per (full-snapshot task or purge, table): rows of that school and table last seen
    // before the latest such run are gone upstream.
    `CREATE TABLE IF NOT EXISTS ${d.table(SNAPSHOTS_TABLE)} (${d.ident('run_id')} ${s} NOT NULL, ${d.ident('school_id')} ${s} NOT NULL, ${d.ident('table_name')} ${s} NOT NULL)`,
  ];
}

export function tableDdl(t: TablePlan, d: Dialect): string[] {
  const cols = (final: boolean): string =>
    t.columns
      .map((c) => {
        const type = final ? d.finalType(c.type) : d.rawType(c.type);
        // Only metadata columns are NOT NULL in raw tables: a scope can null any declared field.
        const notNull = c.name.startsWith('_') && !c.nullable && (final || d.rawNotNull) ? ' NOT NULL' : '';
        return `${d.ident(c.name)} ${type}${notNull}`;
      })
      .join(', ');
  return [
    `CREATE TABLE IF NOT EXISTS ${d.table(rawName(t.name))} (${cols(false)})`,
    `CREATE TABLE IF NOT EXISTS ${d.table(t.name)} (${cols(true)})`,
  ];
}

export function ddlStatements(plan: Plan, d: Dialect): string[] {
  return [...bookkeepingDdl(d), ...plan.tables.flatMap((t) => tableDdl(t, d))];
}

const orderBy = (t: TablePlan, d: Dialect, alias: string): string =>
  t.versionOrder.map((c) => `${alias}.${d.ident(c)} ${d.descNullsLast}`).join(', ');

const partitionBy = (t: TablePlan, d: Dialect, alias: string): string =>
  ['_school_id', ...t.key].map((c) => `${alias}.${d.ident(c)}`).join(', ');

/** The latest deletion record per (school, table, id): a restoration updates the same record. */
function latestDeletions(plan: Plan, t: TablePlan, d: Dialect): string {
  const del = plan.deletions;
  if (!del) throw new Error('latestDeletions without a deletions table');
  const c = (n: string): string => d.ident(n);
  return (
    `SELECT dl.${c('_school_id')}, dl.${c('id')}, dl.${c('deleted_at')}, dl.${c('restored_at')}, dl.${c('_extracted_at')} FROM (` +
    `SELECT x.${c('_school_id')}, x.${c('table')}, x.${c('id')}, x.${c('deleted_at')}, x.${c('restored_at')}, x.${c('_extracted_at')}, ` +
    `ROW_NUMBER() OVER (PARTITION BY x.${c('_school_id')}, x.${c('table')}, x.${c('id')} ORDER BY ${orderBy(del, d, 'x')}) AS ${c('_rn')} ` +
    `FROM ${d.table(rawName(del.name))} AS x WHERE x.${c('table')} = ${d.str(t.name)}` +
    `) AS dl WHERE dl.${c('_rn')} = 1`
  );
}

/** The merge source of a top-level table: each key's latest version and whether it is gone. */
function topLevelSource(plan: Plan, t: TablePlan, d: Dialect): string {
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
    `SELECT r.*, ROW_NUMBER() OVER (PARTITION BY ${partitionBy(t, d, 'r')} ORDER BY ${orderBy(t, d, 'r')}) AS ${c('_rn')}, ` +
    `MAX(r.${c('_run_id')}) OVER (PARTITION BY ${partitionBy(t, d, 'r')}) AS ${c('_last_run')}, ` +
    `MAX(r.${c('_extracted_at')}) OVER (PARTITION BY ${partitionBy(t, d, 'r')}) AS ${c('_last_seen')} ` +
    `FROM ${d.table(rawName(t.name))} AS r) AS v ` +
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
function childSource(t: TablePlan, d: Dialect): string {
  const parent = t.parent;
  if (!parent) throw new Error('childSource without a parent');
  const c = (n: string): string => d.ident(n);
  return (
    `SELECT ${selectList(t, d, 'v')}, (v.${c('_parent_run')} IS NULL) AS ${c('_gone')} FROM (` +
    `SELECT r.*, p.${c('_run_id')} AS ${c('_parent_run')}, ROW_NUMBER() OVER (PARTITION BY ${partitionBy(t, d, 'r')} ` +
    `ORDER BY CASE WHEN p.${c('_run_id')} IS NULL THEN 1 ELSE 0 END, ${orderBy(t, d, 'r')}) AS ${c('_rn')} ` +
    `FROM ${d.table(rawName(t.name))} AS r LEFT JOIN ${d.table(parent.table)} AS p ` +
    `ON p.${c('_school_id')} = r.${c('_school_id')} AND p.${c('id')} = r.${c(parent.column)} AND p.${c('_run_id')} = r.${c('_run_id')}` +
    `) AS v WHERE v.${c('_rn')} = 1`
  );
}

function selectList(t: TablePlan, d: Dialect, alias: string): string {
  return t.columns.map((col) => `${d.finalValue(`${alias}.${d.ident(col.name)}`, col.type)} AS ${d.ident(col.name)}`).join(', ');
}

/** The source query alone: tests parse it where a SQL parser cannot parse MERGE. */
export function mergeSource(plan: Plan, t: TablePlan, d: Dialect): string {
  return t.parent ? childSource(t, d) : topLevelSource(plan, t, d);
}

export function mergeStatement(plan: Plan, t: TablePlan, d: Dialect): string {
  const c = (n: string): string => d.ident(n);
  const on = ['_school_id', ...t.key].map((k) => `tgt.${c(k)} IS NOT DISTINCT FROM src.${c(k)}`).join(' AND ');
  const cols = t.columns.map((col) => c(col.name));
  const keyCols = new Set(['_school_id', ...t.key]);
  const updated = t.columns.filter((col) => !keyCols.has(col.name)).map((col) => c(col.name));
  return [
    `MERGE INTO ${d.table(t.name)} AS tgt`,
    `USING (${mergeSource(plan, t, d)}) AS src`,
    `ON ${on}`,
    `WHEN MATCHED AND src.${c('_gone')} THEN DELETE`,
    `WHEN MATCHED THEN UPDATE SET ${updated.map((n) => `${n} = src.${n}`).join(', ')}`,
    `WHEN NOT MATCHED AND NOT src.${c('_gone')} THEN INSERT (${cols.join(', ')}) VALUES (${cols.map((n) => `src.${n}`).join(', ')})`,
  ].join('\n');
}

/** Merges in dependency order: a child's source reads its parent's merged current state. */
export function mergeStatements(plan: Plan, d: Dialect): string[] {
  return plan.tables.map((t) => mergeStatement(plan, t, d));
}
