import { EXTRA_COLUMN, type ColumnType } from '../table.ts';
import { duckdbDialect, standardString as sqlString } from './dialects.ts';
import { ddlStatements, mergeStatements } from './merge-sql.ts';
import type { Manifest } from '../manifest/types.ts';
import { RUNS_TABLE, SNAPSHOTS_TABLE, rawName, type Plan, type TablePlan } from './plan.ts';
import { runRecords } from './run-records.ts';

/**
 * The DuckDB rendering: the statements loadIntoDuckDb runs. Staging one file is one INSERT ...
 * BY NAME from DuckDB's own reader with the declared types, so a value that does not fit its
 * column fails the load instead of turning into NULL.
 */

export type FileFormat = 'ndjson' | 'csv' | 'parquet';

const d = duckdbDialect();

export function formatOfPath(path: string): FileFormat | undefined {
  if (/\.ndjson(\.gz)?$/.test(path)) return 'ndjson';
  if (/\.csv(\.gz)?$/.test(path)) return 'csv';
  if (path.endsWith('.parquet')) return 'parquet';
  return undefined;
}

/**
 * NDJSON: each line is read as a JSON object and the declared columns are cast from it (a key
 * absent is NULL; a value that does not fit its type fails the load). Undeclared keys (schema
 * drift, which the NDJSON writer keeps as keys) are folded into `_extra`, as CSV and Parquet carry
 * them. JSON columns hold JSON text in every format, so their text is parsed.
 */
export function stageNdjsonSql(t: TablePlan, absPath: string): string {
  const declared = t.columns.filter((c) => c.name !== EXTRA_COLUMN.name);
  const select = declared.map((c) => `${castTo(`json->>${sqlString(c.name)}`, c.type)} AS ${d.ident(c.name)}`);
  const dropDeclared = sqlString(JSON.stringify(Object.fromEntries(declared.map((c) => [c.name, null]))));
  if (t.columns.some((c) => c.name === EXTRA_COLUMN.name)) {
    select.push(`CAST(NULLIF(json_merge_patch(json, ${dropDeclared}), '{}') AS JSON) AS ${d.ident(EXTRA_COLUMN.name)}`);
  }
  return (
    `INSERT INTO ${d.table(rawName(t.name))} BY NAME SELECT ${select.join(', ')} ` +
    `FROM read_ndjson_objects(${sqlString(absPath)}, hive_partitioning = false)`
  );
}

/** Describes the file's columns, for CSV and Parquet, whose column sets vary with the writer's options. */
export function describeSql(format: 'csv' | 'parquet', absPath: string): string {
  return `DESCRIBE SELECT * FROM ${reader(format, absPath)}`;
}

/** CSV (read as text) and Parquet: cast the declared columns the file has, by name. */
export function stageByNameSql(t: TablePlan, format: 'csv' | 'parquet', absPath: string, present: Set<string>): string {
  const cols = t.columns.filter((c) => present.has(c.name));
  const select = cols.map((c) => `${castTo(d.ident(c.name), c.type)} AS ${d.ident(c.name)}`).join(', ');
  return `INSERT INTO ${d.table(rawName(t.name))} BY NAME SELECT ${select} FROM ${reader(format, absPath)}`;
}

function castTo(expr: string, type: ColumnType): string {
  return `CAST(${expr} AS ${d.rawType(type)})`;
}

function reader(format: 'csv' | 'parquet', absPath: string): string {
  return format === 'csv'
    ? `read_csv(${sqlString(absPath)}, header = true, all_varchar = true, allow_quoted_nulls = false, hive_partitioning = false, union_by_name = true)`
    : `read_parquet(${sqlString(absPath)}, hive_partitioning = false, union_by_name = true)`;
}

export function recordRunSql(runId: string, manifestPath: string): string {
  return `INSERT INTO ${d.table(RUNS_TABLE)} VALUES (${sqlString(runId)}, ${sqlString(manifestPath)}, now(), NULL)`;
}

/** Runs staged but not yet merged: a load interrupted between staging and merging still merges. */
export const unmergedRunsSql = `SELECT count(*)::BIGINT AS n FROM ${d.table(RUNS_TABLE)} WHERE merged_at IS NULL`;
export const markMergedSql = `UPDATE ${d.table(RUNS_TABLE)} SET merged_at = now() WHERE merged_at IS NULL`;

export function recordSnapshotsSql(rows: { runId: string; schoolId: string; table: string }[]): string {
  const values = rows.map((r) => `(${sqlString(r.runId)}, ${sqlString(r.schoolId)}, ${sqlString(r.table)})`).join(', ');
  return `INSERT INTO ${d.table(SNAPSHOTS_TABLE)} VALUES ${values}`;
}

/** Columns added to a schema after the database was created are added to both tables. */
export function addColumnsSql(t: TablePlan): string[] {
  return t.columns.flatMap((c) =>
    [rawName(t.name), t.name].map((tbl) => `ALTER TABLE ${d.table(tbl)} ADD COLUMN IF NOT EXISTS ${d.ident(c.name)} ${d.rawType(c.type)}`),
  );
}

export const duckdbDdl = (plan: Plan): string[] => ddlStatements(plan, d);
export const duckdbMerges = (plan: Plan): string[] => mergeStatements(plan, d);

/**
 * Statements for the DuckDB CLI over a local export. With the manifests, each committed file is
 * staged by its own statement (its format from its extension) and the runs and snapshots are
 * recorded; without them each table's folder is globbed (a file left by a crash would load, a
 * folder without files fails, full snapshots are unknown). `warehouse load` does the same as the
 * manifest form and also checks checksums and skips runs already applied.
 */
export function renderDuckDb(plan: Plan, location: string, manifests?: readonly Manifest[]): string[] {
  const base = location.replace(/\/+$/, '');
  const all = (t: TablePlan) => new Set(t.columns.map((c) => c.name)); // the writers write every declared column and _extra
  const stage = (t: TablePlan, path: string): string => {
    const format = formatOfPath(path) ?? 'parquet';
    return format === 'ndjson' ? stageNdjsonSql(t, path) : stageByNameSql(t, format, path, all(t));
  };
  const out = ["SET TimeZone = 'UTC'", ...duckdbDdl(plan)];
  if (manifests) {
    const rec = runRecords(plan, manifests, d, 'now()');
    for (const t of plan.tables) for (const f of rec.filesByTable.get(t.name) ?? []) out.push(stage(t, `${base}/${f.path}`));
    out.push(...rec.statements);
  } else {
    for (const t of plan.tables) out.push(stage(t, `${base}/${t.name}/*/*/*.parquet`));
  }
  return [...out, ...duckdbMerges(plan), ...compactSql(plan), markMergedSql];
}

/**
 * Keeps the staged history bounded: per key, only the rows the merge can still pick (the latest
 * version, and the rows of the last run that saw the key, which decide snapshot removal), child
 * rows staged with a kept parent row, and the latest snapshot per (school, table). The merge
 * over the compacted history gives the same result as over the full history, also when a run
 * committed earlier is applied late. Deletion records are small and kept whole.
 */
export function compactSql(plan: Plan): string[] {
  const out: string[] = [];
  const c = d.ident;
  for (const t of plan.tables) {
    if (t.parent || t === plan.deletions) continue;
    const part = ['_school_id', ...t.key].map((k) => c(k)).join(', ');
    const order = t.versionOrder.map((k) => `${c(k)} DESC NULLS LAST`).join(', ');
    out.push(
      `DELETE FROM ${d.table(rawName(t.name))} WHERE rowid IN (SELECT rid FROM (SELECT rowid AS rid, ${c('_run_id')}, ` +
        `ROW_NUMBER() OVER (PARTITION BY ${part} ORDER BY ${order}) AS rn, MAX(${c('_run_id')}) OVER (PARTITION BY ${part}) AS last_run ` +
        `FROM ${d.table(rawName(t.name))}) WHERE rn > 1 AND ${c('_run_id')} <> last_run)`,
    );
  }
  for (const t of plan.tables) {
    if (!t.parent) continue;
    out.push(
      `DELETE FROM ${d.table(rawName(t.name))} AS r WHERE NOT EXISTS (SELECT 1 FROM ${d.table(rawName(t.parent.table))} AS p ` +
        `WHERE p.${c('_school_id')} = r.${c('_school_id')} AND p.${c('id')} = r.${c(t.parent.column)} AND p.${c('_run_id')} = r.${c('_run_id')})`,
    );
  }
  out.push(
    `DELETE FROM ${d.table(SNAPSHOTS_TABLE)} AS s WHERE s.${c('run_id')} < (SELECT MAX(x.${c('run_id')}) FROM ${d.table(SNAPSHOTS_TABLE)} AS x ` +
      `WHERE x.${c('school_id')} = s.${c('school_id')} AND x.${c('table_name')} = s.${c('table_name')})`,
  );
  return out;
}
