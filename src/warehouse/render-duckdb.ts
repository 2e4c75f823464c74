import { resolve } from 'node:path';
import { ConfigError } from '../errors.ts';
import type { ColumnType } from '../table.ts';
import {
  T,
  applyStatements,
  checkStatements,
  manifestStatements,
  pendingStatements,
  setupStatements,
  stageName,
  stageTableStatements,
  stagedCountStatements,
  type NightlyParts,
} from './nightly.ts';
import type { Plan } from './plan.ts';
import { jsonPath, standardString, type ScriptOptions, type SqlDialect, type WarehouseDialect } from './sql-dialect.ts';

const DUCKDB_TYPES: Record<ColumnType, string> = {
  string: 'VARCHAR',
  integer: 'BIGINT',
  double: 'DOUBLE',
  boolean: 'BOOLEAN',
  // Instants: Parquet TIMESTAMP_MICROS (UTC-adjusted) reads as TIMESTAMPTZ; ISO text with Z casts exactly.
  timestamp: 'TIMESTAMPTZ',
  json: 'JSON',
};

export function duckdbSql(): SqlDialect {
  const str = standardString;
  return {
    name: 'duckdb',
    ident: (n) => `"${n}"`,
    str,
    table: (n) => `"${n}"`,
    temp: (n) => `"${n}"`,
    rawType: (t) => DUCKDB_TYPES[t],
    finalType: (t) => DUCKDB_TYPES[t],
    finalValue: (e) => e,
    descNullsLast: 'DESC NULLS LAST',
    rawNotNull: true,
    now: 'now()',
    tableOptions: () => '',
    json: {
      str: (e, p) => `json_extract_string(${e}, ${str(jsonPath(p))})`,
      int: (e, p) => `CAST(json_extract_string(${e}, ${str(jsonPath(p))}) AS BIGINT)`,
      arrayLength: (e, p) => `json_array_length(${e}, ${str(jsonPath(p))})`,
      each: (e, p, alias) => ({ from: `, json_each(${e}, ${str(jsonPath(p))}) AS ${alias}`, value: `${alias}.value` }),
    },
    fullMatch: (e, pattern) => `regexp_full_match(${e}, ${str(pattern)})`,
    stringAgg: (e, sep) => `string_agg(${e}, ${str(sep)})`,
    firstNonNull: (e, over) => `FIRST_VALUE(${e} IGNORE NULLS) OVER (${over})`,
    contains: (h, n) => `contains(${h}, ${n})`,
    createTemp: (name, select) => `CREATE OR REPLACE TEMP TABLE "${name}" AS ${select}`,
    // error() runs only for rows the query returns: an empty result passes.
    failIf: (query, message) => `SELECT error(${message}) FROM (${query}) AS q LIMIT 1`,
    beginTransaction: 'BEGIN TRANSACTION',
    commit: 'COMMIT',
  };
}

/**
 * The DuckDB rendering of the static load: what the BigQuery and Snowflake scripts do, run by
 * the tests against real exports (and usable with the DuckDB CLI: `duckdb -bail FILE < load.sql`).
 * Manifests are read as newline-delimited JSON, as BigQuery reads them; each table's pending
 * files are read by a statement built from the pending list (DuckDB's query() runs it), as
 * BigQuery's EXECUTE IMMEDIATE and Snowflake's do.
 */
function script(plan: Plan, opts: ScriptOptions): string[] {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(opts.location)) {
    throw new ConfigError(`--dest ${opts.location}: the DuckDB script reads a local export directory (use warehouse load for s3://)`);
  }
  const d = duckdbSql();
  const parts: NightlyParts = { plan, d, requirePseudonymised: opts.requirePseudonymised ?? false };
  // The DuckDB CLI reads paths relative to where it runs: the script names the directory absolutely.
  const base = resolve(opts.location).replace(/\/+$/, '');
  const c = (n: string): string => d.ident(n);
  const docs =
    `SELECT regexp_extract(filename, '_manifests/[^/]+(/[^/]+)?$') AS ${c('manifest')}, json AS ${c('doc')} ` +
    `FROM read_json_objects(${d.str(`${base}/_manifests/**/*.json`)}, format = 'newline_delimited', filename = true, maximum_object_size = 1073741824)`;
  const stage = plan.tables.flatMap((t) => {
    const uri = `replace(${d.str(`${base}/`)} || ${c('path')}, '''', '''''')`;
    // By name, as BigQuery and Snowflake load: a declared column no file has stays NULL. Only
    // declared columns: DuckDB adds region/school_id from the folder names whatever
    // hive_partitioning says.
    const declared = `COLUMNS(c -> list_contains([${t.columns.map((col) => `''${col.name}''`).join(', ')}], c))`;
    return [
      `SET VARIABLE se_stage = (SELECT CASE WHEN COUNT(*) = 0 THEN ${d.str(`SELECT * FROM "${stageName(t.name)}" LIMIT 0`)} ` +
        `ELSE 'SELECT ${declared} FROM read_parquet([' || ${d.stringAgg(`'''' || ${uri} || ''''`, ', ')} || '], hive_partitioning = false, union_by_name = true)' END ` +
        `FROM (SELECT DISTINCT ${c('path')} FROM ${d.temp(T.pendingFiles)} WHERE ${c('table_name')} = ${d.str(t.name)}) AS pf)`,
      `INSERT INTO ${d.temp(stageName(t.name))} BY NAME SELECT * FROM query(getvariable('se_stage'))`,
    ];
  });
  const staged = (t: { name: string }): string => d.temp(stageName(t.name));
  return [
    "SET TimeZone = 'UTC'",
    ...setupStatements(parts),
    ...manifestStatements(parts, docs),
    ...pendingStatements(parts),
    ...checkStatements(parts),
    ...stageTableStatements(parts),
    ...stage,
    ...stagedCountStatements(parts, staged),
    d.beginTransaction,
    ...applyStatements(parts, staged),
    d.commit,
  ];
}

export const duckdb: WarehouseDialect = {
  name: 'duckdb',
  location: 'a local export directory',
  sql: () => duckdbSql(),
  script,
};
