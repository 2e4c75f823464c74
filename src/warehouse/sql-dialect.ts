import type { ColumnType } from '../table.ts';
import type { Plan, TablePlan } from './plan.ts';

/**
 * What differs between warehouses in the SQL text every dialect shares (DDL, the manifest
 * queries, the merge): identifier quoting, type names, JSON access, temporary tables and how a
 * script fails on purpose. Loading files differs more and lives in render-<dialect>.ts.
 */
export interface SqlDialect {
  name: string;
  ident(name: string): string;
  /** A table of the warehouse (qualified with the dataset / schema when there is one). */
  table(name: string): string;
  /** A temporary table of this load (BigQuery refuses qualified temporary table names). */
  temp(name: string): string;
  str(value: string): string;
  /** Type of a column in the raw (staging) table: what the file format loads without loss. */
  rawType(t: ColumnType): string;
  /** Type of a column in the current-state table. */
  finalType(t: ColumnType): string;
  /** Expression turning a raw column into the final column (JSON text → VARIANT in Snowflake). */
  finalValue(expr: string, t: ColumnType): string;
  /**
   * Whether raw tables declare the metadata columns NOT NULL. BigQuery refuses to load a Parquet
   * column (optional, as Parquet writers declare them) into a REQUIRED column, so it checks them
   * in the final tables only.
   */
  rawNotNull: boolean;
  /** Descending order with NULLs last (a row without updated_at is never "latest" by it). */
  descNullsLast: string;
  now: string;
  /** Text after the column list of CREATE TABLE (clustering), or ''. */
  tableOptions(t: TablePlan, kind: 'raw' | 'final'): string;
  /** Manifests are JSON documents; these read them (path: keys from the document root). */
  json: JsonAccess;
  /** Whether the whole of `expr` matches the regular expression `pattern` (no anchors in it). */
  fullMatch(expr: string, pattern: string): string;
  stringAgg(expr: string, separator: string): string;
  /** The first non-null value of `expr` in a window (`over`: what goes inside OVER (...)). */
  firstNonNull(expr: string, over: string): string;
  /** Whether the text `haystack` contains the text `needle`. */
  contains(haystack: string, needle: string): string;
  createTemp(name: string, select: string): string;
  /**
   * A statement that fails the script with `message` (an SQL text expression over `query`'s
   * columns) when `query` returns a row, and does nothing otherwise.
   */
  failIf(query: string, message: string, staticMessage: string): string;
  beginTransaction: string;
  commit: string;
}

export interface JsonAccess {
  str(expr: string, path: string[]): string;
  int(expr: string, path: string[]): string;
  arrayLength(expr: string, path: string[]): string;
  /** A FROM-clause fragment (starting with ',') joining each element of an array, and its value. */
  each(expr: string, path: string[], alias: string): { from: string; value: string };
}

/** A string literal where backslash escapes (BigQuery, Snowflake). */
export const sqlString = (s: string): string => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;
/** A standard SQL string literal (DuckDB): backslash is an ordinary character. */
export const standardString = (s: string): string => `'${s.replace(/'/g, "''")}'`;

/** '$.a.b' for dialects with JSONPath functions; keys are plain names (table and field names). */
export const jsonPath = (path: string[]): string => (path.length ? `$.${path.join('.')}` : '$');

/** Options every dialect's load script takes. */
export interface ScriptOptions {
  /** Where the export is: gs://bucket/prefix (BigQuery), s3:// | gs:// | azure:// (Snowflake), a directory (DuckDB). */
  location: string;
  /** BigQuery dataset (default school_export) / Snowflake schema (default: the session's). */
  dataset?: string;
  /** Refuse tasks whose manifest does not record person ids as pseudonymised. */
  requirePseudonymised?: boolean;
  /** Snowflake: the stage and the storage integration the account admin created. */
  stage?: string;
  storageIntegration?: string;
}

/**
 * One warehouse: its SQL dialect and the static load script. Adding a warehouse is one file
 * exporting one of these plus one line in dialects.ts.
 */
export interface WarehouseDialect {
  name: string;
  /** What --dest must look like, for help text. */
  location: string;
  sql(opts: Pick<ScriptOptions, 'dataset'>): SqlDialect;
  /** The load script, statement by statement (no terminators): rendered once, run after every export. */
  script(plan: Plan, opts: ScriptOptions): string[];
  /** How the statements are joined into one file (Snowflake wraps its block in EXECUTE IMMEDIATE). */
  join?(statements: string[]): string;
}
