import type { Manifest } from '../manifest/types.ts';
import { EXTRA_COLUMN, type ColumnType } from '../table.ts';
import { rawName, type TablePlan } from './plan.ts';
import { duckdbSql } from './render-duckdb.ts';
import { standardString as sqlString } from './sql-dialect.ts';

/**
 * How `warehouse load` stages one file into DuckDB: one INSERT ... BY NAME from DuckDB's own
 * reader with the declared types, so a value that does not fit its column fails the load instead
 * of turning into NULL. Any format the exporter writes.
 */

export type FileFormat = Manifest['format'];

const d = duckdbSql();

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

/** Columns added to a schema after the database was created are added to both tables. */
export function addColumnsSql(t: TablePlan): string[] {
  return t.columns.flatMap((c) =>
    [rawName(t.name), t.name].map((tbl) => `ALTER TABLE ${d.table(tbl)} ADD COLUMN IF NOT EXISTS ${d.ident(c.name)} ${d.rawType(c.type)}`),
  );
}
