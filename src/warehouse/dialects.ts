import { bigquery } from './render-bigquery.ts';
import { duckdb } from './render-duckdb.ts';
import { snowflake } from './render-snowflake.ts';
import type { WarehouseDialect } from './sql-dialect.ts';

/**
 * The warehouses `warehouse sql` and `warehouse dbt` render for: the one list of their names
 * (the CLI's --dialect choices and the types derive from it). Adding one is a render-<name>.ts
 * exporting a WarehouseDialect plus a line here.
 */
export const DIALECTS = {
  bigquery,
  snowflake,
  duckdb,
} as const satisfies Record<string, WarehouseDialect>;

export type DialectName = keyof typeof DIALECTS;

export const DIALECT_NAMES = Object.keys(DIALECTS) as DialectName[];
