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
  stagedCountStatements,
  type NightlyParts,
} from './nightly.ts';
import { rawName, type Plan, type TablePlan } from './plan.ts';
import { jsonPath, sqlString, type ScriptOptions, type SqlDialect, type WarehouseDialect } from './sql-dialect.ts';

/**
 * BigQuery: the manifests through an external table (each manifest is one line of JSON: read as
 * a one-column CSV whose delimiter, a tab, never occurs in compact JSON), the pending files of
 * each table loaded with LOAD DATA by EXECUTE IMMEDIATE (a type mismatch fails the load instead
 * of nulling values), then one transaction applies them. The rows carry _school_id and _region,
 * so the region=/school_id= folders are not read as hive partitions.
 */

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

/** LOAD DATA accepts 10,000 URIs and ~1 MB of text: 2,000 URIs of up to ~400 characters stay under both. */
const URIS_PER_LOAD = 2000;
const MESSAGE = 'se_message';
export const MANIFEST_LINES = '_school_export_manifest_lines';

export function bigquerySql(dataset: string): SqlDialect {
  const str = sqlString;
  const ident = (n: string): string => `\`${n}\``;
  return {
    name: 'bigquery',
    ident,
    str,
    table: (n) => `\`${dataset}.${n}\``,
    temp: ident,
    rawType: (t) => BIGQUERY_TYPES[t],
    finalType: (t) => BIGQUERY_TYPES[t],
    finalValue: (e) => e,
    descNullsLast: 'DESC', // BigQuery's default for DESC is NULLS LAST
    rawNotNull: false,
    now: 'CURRENT_TIMESTAMP()',
    // The merge matches on (_school_id, key) and the compaction scans by school: clustering on
    // them prunes blocks. No partitioning: current-state rows have no stable date (the merge
    // would move rows between partitions), and staged history is pruned by the compaction
    // rather than expired (expiry would drop the rows the current state is computed from).
    tableOptions: (t: TablePlan) => `CLUSTER BY ${['_school_id', ...t.key].slice(0, 4).map(ident).join(', ')}`,
    json: {
      str: (e, p) => `JSON_VALUE(${e}, ${str(jsonPath(p))})`,
      int: (e, p) => `CAST(JSON_VALUE(${e}, ${str(jsonPath(p))}) AS INT64)`,
      arrayLength: (e, p) => `ARRAY_LENGTH(JSON_QUERY_ARRAY(${e}, ${str(jsonPath(p))}))`,
      each: (e, p, alias) => ({ from: `, UNNEST(JSON_QUERY_ARRAY(${e}, ${str(jsonPath(p))})) AS ${alias}`, value: alias }),
    },
    fullMatch: (e, pattern) => `REGEXP_CONTAINS(${e}, ${str(`^(?:${pattern})$`)})`,
    stringAgg: (e, sep) => `STRING_AGG(${e}, ${str(sep)})`,
    firstNonNull: (e, over) => `FIRST_VALUE(${e} IGNORE NULLS) OVER (${over})`,
    contains: (h, n) => `STRPOS(${h}, ${n}) > 0`,
    createTemp: (name, select) => `CREATE OR REPLACE TEMP TABLE ${ident(name)} AS ${select}`,
    failIf: (query, message) =>
      `SET ${MESSAGE} = (SELECT ${message} FROM (${query}) AS q LIMIT 1);\n` +
      `IF ${MESSAGE} IS NOT NULL THEN RAISE USING MESSAGE = ${MESSAGE}; END IF`,
    beginTransaction: 'BEGIN TRANSACTION',
    commit: 'COMMIT TRANSACTION',
  };
}

function checkLocation(location: string): string {
  if (!location.startsWith('gs://')) {
    throw new ConfigError(
      `BigQuery loads from Cloud Storage: --dest must be gs://bucket/prefix (copy an S3 export with the Storage Transfer Service first), got ${location}`,
    );
  }
  if (!/^gs:\/\/[a-z0-9][a-z0-9._-]{1,220}[a-z0-9](\/[A-Za-z0-9_=.\-/]*)?$/.test(location)) {
    throw new ConfigError(
      `--dest ${location}: not a valid Cloud Storage location (bucket: 3-222 lower-case letters, digits, . _ -; prefix: letters, digits, _ = . - /)`,
    );
  }
  return location.replace(/\/+$/, '');
}

function script(plan: Plan, opts: ScriptOptions): string[] {
  const base = checkLocation(opts.location);
  const dataset = opts.dataset ?? 'school_export';
  if (!/^[A-Za-z0-9_]{1,1024}$/.test(dataset)) throw new ConfigError(`BigQuery dataset "${dataset}": letters, digits and _ only`);
  const d = bigquerySql(dataset);
  const parts: NightlyParts = { plan, d, requirePseudonymised: opts.requirePseudonymised ?? false };
  const c = (n: string): string => d.ident(n);
  const lines = d.table(MANIFEST_LINES);
  const docs =
    `SELECT REGEXP_EXTRACT(_FILE_NAME, r'_manifests/[^/]+(?:/[^/]+)?$') AS ${c('manifest')}, ${c('line')} AS ${c('doc')} ` +
    `FROM ${lines} WHERE ENDS_WITH(_FILE_NAME, '.json')`;
  const stageTable = (t: { name: string }): string => d.table(stageName(t.name));
  const load = plan.tables.map(
    (t) =>
      `FOR f IN (SELECT ${d.stringAgg(`CONCAT("'", ${d.str(`${base}/`)}, ${c('path')}, "'")`, ', ')} AS uris FROM ` +
      `(SELECT ${c('path')}, DIV(ROW_NUMBER() OVER (ORDER BY ${c('path')}) - 1, ${URIS_PER_LOAD}) AS chunk FROM ` +
      `(SELECT DISTINCT ${c('path')} FROM ${d.temp(T.pendingFiles)} WHERE ${c('table_name')} = ${d.str(t.name)})) GROUP BY chunk) DO\n` +
      `  EXECUTE IMMEDIATE CONCAT(${d.str(`LOAD DATA INTO ${stageTable(t)} FROM FILES (format = 'PARQUET', uris = [`)}, f.uris, '])');\n` +
      'END FOR',
  );
  return [
    // Scripts declare their variables first.
    `DECLARE ${MESSAGE} STRING`,
    `CREATE SCHEMA IF NOT EXISTS \`${dataset}\``,
    ...setupStatements(parts),
    `CREATE OR REPLACE EXTERNAL TABLE ${lines} (${c('line')} STRING) OPTIONS (format = 'CSV', ` +
      `uris = [${d.str(`${base}/_manifests/*`)}], field_delimiter = '\\t', quote = '', max_bad_records = 0)`,
    ...manifestStatements(parts, docs),
    ...pendingStatements(parts),
    ...checkStatements(parts),
    // LOAD DATA writes into a table of the dataset; these are emptied at every load and dropped after it.
    ...plan.tables.map((t) => `CREATE OR REPLACE TABLE ${stageTable(t)} AS SELECT * FROM ${d.table(rawName(t.name))} WHERE 1 = 0`),
    ...load,
    ...stagedCountStatements(parts, stageTable),
    d.beginTransaction,
    ...applyStatements(parts, stageTable),
    d.commit,
    ...plan.tables.map((t) => `DROP TABLE IF EXISTS ${stageTable(t)}`),
  ];
}

export const bigquery: WarehouseDialect = {
  name: 'bigquery',
  location: 'gs://bucket/prefix',
  sql: (o) => bigquerySql(o.dataset ?? 'school_export'),
  script,
};

/** JSON schema files for `bq mk --table` / `bq load --schema`, one per table. */
export function bigQuerySchemaFiles(plan: Plan, dataset = 'school_export'): Record<string, string> {
  const d = bigquerySql(dataset);
  const files: Record<string, string> = {};
  for (const t of plan.tables) {
    const fields = t.columns.map((c) => ({
      name: c.name,
      type: d.finalType(c.type),
      mode: c.name.startsWith('_') && !c.nullable ? 'REQUIRED' : 'NULLABLE',
    }));
    files[`${t.name}.json`] = JSON.stringify(fields, null, 2) + '\n';
  }
  return files;
}
