import type { ColumnType } from '../table.ts';

/**
 * What differs between warehouses in the shared DDL and merge text: identifier quoting, type
 * names, and how a staged JSON text becomes the final JSON value. Loading differs more and lives
 * in render-<dialect>.ts.
 */
export interface Dialect {
  name: 'duckdb' | 'bigquery' | 'snowflake';
  ident(name: string): string;
  table(name: string): string;
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
}

/** A string literal where backslash escapes (BigQuery, Snowflake). */
export const sqlString = (s: string): string => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;
/** A standard SQL string literal (DuckDB): backslash is an ordinary character. */
export const standardString = (s: string): string => `'${s.replace(/'/g, "''")}'`;

const DUCKDB_TYPES: Record<ColumnType, string> = {
  string: 'VARCHAR',
  integer: 'BIGINT',
  double: 'DOUBLE',
  boolean: 'BOOLEAN',
  // Instants: Parquet TIMESTAMP_MICROS (UTC-adjusted) reads as TIMESTAMPTZ; ISO text with Z casts exactly.
  timestamp: 'TIMESTAMPTZ',
  json: 'JSON',
};

export function duckdbDialect(): Dialect {
  return {
    name: 'duckdb',
    ident: (n) => `"${n}"`,
    str: standardString,
    table: (n) => `"${n}"`,
    rawType: (t) => DUCKDB_TYPES[t],
    finalType: (t) => DUCKDB_TYPES[t],
    finalValue: (e) => e,
    descNullsLast: 'DESC NULLS LAST',
    rawNotNull: true,
  };
}

const BIGQUERY_TYPES: Record<ColumnType, string> = {
  string: 'STRING',
  integer: 'INT64',
  double: 'FLOAT64',
  boolean: 'BOOL',
  timestamp: 'TIMESTAMP',
  // JSON text stays STRING: a Parquet string column loads into STRING without conversion
  // surprises; query it with JSON_VALUE / PARSE_JSON.
  json: 'STRING',
};

export function bigqueryDialect(dataset: string): Dialect {
  return {
    name: 'bigquery',
    ident: (n) => `\`${n}\``,
    str: sqlString,
    table: (n) => `\`${dataset}.${n}\``,
    rawType: (t) => BIGQUERY_TYPES[t],
    finalType: (t) => BIGQUERY_TYPES[t],
    finalValue: (e) => e,
    descNullsLast: 'DESC', // BigQuery's default for DESC is NULLS LAST
    rawNotNull: false,
  };
}

const SNOWFLAKE_TYPES: Record<ColumnType, string> = {
  string: 'VARCHAR',
  integer: 'NUMBER(38,0)',
  double: 'FLOAT',
  boolean: 'BOOLEAN',
  // TIMESTAMP_TZ keeps the instant whatever the session time zone; the source zone name is in
  // the <field>__timezone column.
  timestamp: 'TIMESTAMP_TZ',
  json: 'VARIANT',
};

// Snowflake reserved words that appear as our column names or could: quoted (upper case, so
// they still match unquoted references and CASE_INSENSITIVE column matching).
const SNOWFLAKE_RESERVED = new Set(
  'account all alter and any as between by case cast check column connect connection constraint create cross current current_date current_time current_timestamp current_user database delete distinct drop else exists false following for from full grant group gscluster having ilike in increment inner insert intersect into is issue join lateral left like localtime localtimestamp minus natural not null of on or order organization qualify regexp revoke right rlike row rows sample schema select set some start table tablesample then to trigger true try_cast union unique update using values view when whenever where with'.split(
    ' ',
  ),
);

export function snowflakeDialect(schema?: string): Dialect {
  const ident = (n: string): string => (SNOWFLAKE_RESERVED.has(n) ? `"${n.toUpperCase()}"` : n);
  return {
    name: 'snowflake',
    ident,
    str: sqlString,
    table: (n) => (schema ? `${schema}.${ident(n)}` : ident(n)),
    // Staged JSON stays text: PARSE_JSON in the merge fails loudly on bad JSON instead of
    // loading a JSON string into a VARIANT.
    rawType: (t) => (t === 'json' ? 'VARCHAR' : SNOWFLAKE_TYPES[t]),
    finalType: (t) => SNOWFLAKE_TYPES[t],
    finalValue: (e, t) => (t === 'json' ? `PARSE_JSON(${e})` : e),
    descNullsLast: 'DESC NULLS LAST', // Snowflake puts NULLs first in DESC by default
    rawNotNull: true,
  };
}
