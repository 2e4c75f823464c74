import type { Manifest } from '../manifest/types.ts';
import { EXTRA_COLUMN, type ColumnType } from '../table.ts';
import type { TablePlan } from './plan.ts';
import { duckdbSql } from './render-duckdb.ts';
import { standardString as sqlString } from './sql-dialect.ts';

/**
 * How `warehouse load` stages files into DuckDB: one INSERT ... BY NAME per table and batch of
 * files, from DuckDB's own reader over the list of files, with the declared types, so a value
 * that does not fit its column fails the load instead of turning into NULL. Any format the
 * exporter writes; the files of one statement share a format (and compression).
 */

export type FileFormat = Manifest['format'];

const d = duckdbSql();

export function formatOfPath(path: string): FileFormat | undefined {
  if (/\.ndjson(\.gz)?$/.test(path)) return 'ndjson';
  if (/\.csv(\.gz)?$/.test(path)) return 'csv';
  if (path.endsWith('.parquet')) return 'parquet';
  return undefined;
}

/** Files read by one statement must agree on this: format and compression. */
export function readerKind(path: string): string | undefined {
  const f = formatOfPath(path);
  return f && `${f}${path.endsWith('.gz') ? '.gz' : ''}`;
}

const list = (paths: string[]): string => `[${paths.map(sqlString).join(', ')}]`;

/**
 * NDJSON: each line is read as a JSON object and the declared columns are cast from it (a key
 * absent is NULL; a value that does not fit its type fails the load). Undeclared keys (schema
 * drift, which the NDJSON writer keeps as keys) are folded into `_extra`, as CSV and Parquet carry
 * them. JSON columns hold JSON text in every format, so their text is parsed.
 */
export function stageNdjsonSql(t: TablePlan, into: string, paths: string[]): string {
  return `INSERT INTO ${d.temp(into)} BY NAME ${selectNdjsonSql(t, paths)}`;
}

export function selectNdjsonSql(t: TablePlan, paths: string[]): string {
  const declared = t.columns.filter((c) => c.name !== EXTRA_COLUMN.name);
  const select = declared.map((c) => `${castTo(`json->>${sqlString(c.name)}`, c.type)} AS ${d.ident(c.name)}`);
  const dropDeclared = sqlString(JSON.stringify(Object.fromEntries(declared.map((c) => [c.name, null]))));
  if (t.columns.some((c) => c.name === EXTRA_COLUMN.name)) {
    select.push(`CAST(NULLIF(json_merge_patch(json, ${dropDeclared}), '{}') AS JSON) AS ${d.ident(EXTRA_COLUMN.name)}`);
  }
  return `SELECT ${select.join(', ')} FROM read_ndjson_objects(${list(paths)}, hive_partitioning = false)`;
}

/** Describes the files' columns (their union), for CSV and Parquet, whose column sets vary with the writer's options. */
export function describeSql(format: 'csv' | 'parquet', paths: string[]): string {
  return `DESCRIBE SELECT * FROM ${reader(format, paths)}`;
}

/** CSV (read as text) and Parquet: cast the declared columns the files have, by name. */
export function stageByNameSql(t: TablePlan, into: string, format: 'csv' | 'parquet', paths: string[], present: Set<string>): string {
  return `INSERT INTO ${d.temp(into)} BY NAME ${selectByNameSql(t, format, paths, present)}`;
}

export function selectByNameSql(t: TablePlan, format: 'csv' | 'parquet', paths: string[], present: Set<string>): string {
  const cols = t.columns.filter((c) => present.has(c.name));
  const select = cols.map((c) => `${castTo(d.ident(c.name), c.type)} AS ${d.ident(c.name)}`).join(', ');
  return `SELECT ${select} FROM ${reader(format, paths)}`;
}

function castTo(expr: string, type: ColumnType): string {
  return `CAST(${expr} AS ${d.rawType(type)})`;
}

function reader(format: 'csv' | 'parquet', paths: string[]): string {
  return format === 'csv'
    ? `read_csv(${list(paths)}, header = true, all_varchar = true, allow_quoted_nulls = false, hive_partitioning = false, union_by_name = true)`
    : `read_parquet(${list(paths)}, hive_partitioning = false, union_by_name = true)`;
}

/** Columns added to a schema after the database was created are added to both tables. */
export function addColumnsSql(t: TablePlan): string[] {
  return t.columns.flatMap((c) =>
    [`_raw_${t.name}`, t.name].map((tbl) => `ALTER TABLE ${d.table(tbl)} ADD COLUMN IF NOT EXISTS ${d.ident(c.name)} ${d.rawType(c.type)}`),
  );
}
