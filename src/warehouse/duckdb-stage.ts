import type { Manifest } from '../manifest/types.ts';
import { EXTRA_COLUMN, type ColumnType } from '../table.ts';
import { rawName, type TablePlan } from './plan.ts';
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

/** What a manifest says of a file's size: its bytes, and its longest line (absent in older manifests and for Parquet). */
export interface FileSize {
  path: string;
  bytes?: number | null;
  maxLineBytes?: number | null;
}

const MiB = 1024 * 1024;
/**
 * Without a recorded longest line: a compressed file's lines are not bounded by its size, so a
 * CSV line may be up to this (NDJSON keeps DuckDB's own 16 MiB object size, whose reader grows
 * past it, and whose buffers are twice the limit: 64 MiB would need 128 MiB per reader).
 */
export const UNKNOWN_LINE_BYTES = { csv: 64 * MiB, ndjson: 16 * MiB } as const;

/**
 * The readers' limits for a batch of files, from the longest line the manifests record (the
 * writers count it, newline included), so a 2 MB CSV line or NDJSON row loads however long, and
 * short lines keep the readers' buffers small. A file without a record: an uncompressed file's
 * size bounds its lines; a compressed one takes UNKNOWN_LINE_BYTES.
 */
export function readerLimits(kind: 'csv' | 'ndjson', files: FileSize[]): { maxLine: number; buffer: number } {
  let longest = 0;
  for (const f of files) {
    const known = f.maxLineBytes ?? (f.path.endsWith('.gz') || f.bytes == null ? undefined : f.bytes);
    longest = Math.max(longest, known ?? UNKNOWN_LINE_BYTES[kind]);
  }
  // DuckDB's defaults are the floor (2 MB lines for CSV, 1 MiB here for NDJSON); a little room
  // over the longest line for the reader's own bookkeeping
  const maxLine = Math.max(kind === 'csv' ? 2 * 1000 * 1000 : MiB, Math.ceil(longest) + 64 * 1024);
  return { maxLine, buffer: Math.max(32 * MiB, maxLine + MiB) };
}

/**
 * The memory each of a statement's file readers holds while it reads, for the kinds that buffer:
 * the CSV buffer we set, and DuckDB's JSON reader buffer (twice the object size, at least 32 MiB:
 * measured with DuckDB 1.5 by the size of its failed allocations). Parquet is read a row group at a
 * time, and ours are about 1 MiB: 0.
 */
export function readerBufferBytes(kind: string, files: FileSize[]): number {
  if (kind.startsWith('csv')) return readerLimits('csv', files).buffer;
  if (kind.startsWith('ndjson')) return Math.max(32 * MiB, 2 * readerLimits('ndjson', files).maxLine);
  return 0;
}

/**
 * NDJSON: each line is read as a JSON object and the declared columns are cast from it (a key
 * absent is NULL; a value that does not fit its type fails the load). Undeclared keys (schema
 * drift, which the NDJSON writer keeps as keys) are folded into `_extra`, as CSV and Parquet carry
 * them. JSON columns hold JSON text in every format, so their text is parsed.
 */
export function stageNdjsonSql(t: TablePlan, into: string, files: FileSize[]): string {
  return `INSERT INTO ${d.temp(into)} BY NAME ${selectNdjsonSql(t, files)}`;
}

export function selectNdjsonSql(t: TablePlan, files: FileSize[]): string {
  const declared = t.columns.filter((c) => c.name !== EXTRA_COLUMN.name);
  // Every declared column from one parse of the line (json_extract_string with a list of JSON
  // pointers): one `json->>'column'` per column parses the line again each time, and a 2.5 MB
  // line times 25 columns exceeded the memory limit.
  const pointer = (name: string): string => sqlString(`/${name.replace(/~/g, '~0').replace(/\//g, '~1')}`);
  const select = declared.map((c, i) => `${castTo(`v[${i + 1}]`, c.type)} AS ${d.ident(c.name)}`);
  const dropDeclared = sqlString(JSON.stringify(Object.fromEntries(declared.map((c) => [c.name, null]))));
  if (t.columns.some((c) => c.name === EXTRA_COLUMN.name)) {
    select.push(`CAST(NULLIF(json_merge_patch(json, ${dropDeclared}), '{}') AS JSON) AS ${d.ident(EXTRA_COLUMN.name)}`);
  }
  const { maxLine } = readerLimits('ndjson', files);
  return (
    `SELECT ${select.join(', ')} FROM (SELECT json, json_extract_string(json, [${declared.map((c) => pointer(c.name)).join(', ')}]) AS v ` +
    `FROM read_ndjson_objects(${list(files.map((f) => f.path))}, hive_partitioning = false, maximum_object_size = ${maxLine})) AS x`
  );
}

/** Describes the files' columns (their union), for CSV and Parquet, whose column sets vary with the writer's options. */
export function describeSql(format: 'csv' | 'parquet', files: FileSize[]): string {
  return `DESCRIBE SELECT * FROM ${reader(format, files)}`;
}

/** CSV (read as text) and Parquet: cast the declared columns the files have, by name. */
export function stageByNameSql(t: TablePlan, into: string, format: 'csv' | 'parquet', files: FileSize[], present: Set<string>): string {
  return `INSERT INTO ${d.temp(into)} BY NAME ${selectByNameSql(t, format, files, present)}`;
}

export function selectByNameSql(t: TablePlan, format: 'csv' | 'parquet', files: FileSize[], present: Set<string>): string {
  const cols = t.columns.filter((c) => present.has(c.name));
  const select = cols.map((c) => `${castTo(d.ident(c.name), c.type)} AS ${d.ident(c.name)}`).join(', ');
  return `SELECT ${select} FROM ${reader(format, files)}`;
}

function castTo(expr: string, type: ColumnType): string {
  return `CAST(${expr} AS ${d.rawType(type)})`;
}

function reader(format: 'csv' | 'parquet', files: FileSize[]): string {
  const paths = list(files.map((f) => f.path));
  if (format === 'parquet') return `read_parquet(${paths}, hive_partitioning = false, union_by_name = true)`;
  const { maxLine, buffer } = readerLimits('csv', files);
  return (
    `read_csv(${paths}, header = true, all_varchar = true, allow_quoted_nulls = false, hive_partitioning = false, union_by_name = true, ` +
    `max_line_size = ${maxLine}, buffer_size = ${buffer})`
  );
}

/** The tables' columns as DuckDB has them, for addColumnsSql: (table_name, column_name) rows. */
export const columnsSql =
  "SELECT table_name, column_name FROM duckdb_columns() WHERE schema_name = 'main' AND database_name = current_database()";

/**
 * Columns added to a schema after the database was created are added to both tables. Only the
 * missing ones (`has` says which the tables have): a statement per column and table was ~380
 * statements on every load of the built-in tables, 150-200 ms of DuckDB's time.
 */
export function addColumnsSql(t: TablePlan, has: (table: string, column: string) => boolean): string[] {
  return t.columns.flatMap((c) =>
    [rawName(t.name), t.name]
      .filter((tbl) => !has(tbl, c.name))
      .map((tbl) => `ALTER TABLE ${d.table(tbl)} ADD COLUMN IF NOT EXISTS ${d.ident(c.name)} ${d.rawType(c.type)}`),
  );
}
