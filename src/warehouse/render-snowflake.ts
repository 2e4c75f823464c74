import { ConfigError } from '../errors.ts';
import type { Manifest } from '../manifest/types.ts';
import { snowflakeDialect, sqlString } from './dialects.ts';
import { ddlStatements, mergeStatements } from './merge-sql.ts';
import { rawName, type Plan } from './plan.ts';
import { chunks, markMerged, MAX_STATEMENT_CHARS, runRecords } from './run-records.ts';

/**
 * Snowflake: an external stage on the export, COPY INTO _raw_<table> by column name with Parquet
 * logical types (without USE_LOGICAL_TYPE, TIMESTAMP_MICROS loads in the wrong unit), then the
 * MERGE per table. COPY's load metadata skips files it already loaded, so re-running the script
 * does not stage a file twice.
 */
const NOW = 'CURRENT_TIMESTAMP()';
// COPY INTO accepts at most 1,000 names in FILES.
const MAX_FILES = 1000;
const FILE_FORMAT = 'FILE_FORMAT = (TYPE = PARQUET USE_LOGICAL_TYPE = TRUE)';

export interface SnowflakeOptions {
  schema?: string;
  stage?: string;
  /** A storage integration the account admin created for the bucket (see docs/warehouse.md). */
  storageIntegration?: string;
}

export function renderSnowflakeStatements(plan: Plan, location: string, opts: SnowflakeOptions, manifests?: readonly Manifest[]): string[] {
  const url = location.replace(/^gs:\/\//, 'gcs://').replace(/\/+$/, '') + '/';
  if (!/^(s3|gcs|azure):\/\/[A-Za-z0-9._-]+\//.test(url)) {
    throw new ConfigError(`Snowflake stages read s3://, gs:// or azure:// locations, got ${location}`);
  }
  for (const [what, v] of Object.entries({ schema: opts.schema, stage: opts.stage, storageIntegration: opts.storageIntegration })) {
    if (v !== undefined && !/^[A-Za-z_][A-Za-z0-9_$]{0,254}$/.test(v))
      throw new ConfigError(`Snowflake ${what} "${v}": letters, digits, _ and $ only`);
  }
  const d = snowflakeDialect(opts.schema);
  const stage = (opts.schema ? `${opts.schema}.` : '') + (opts.stage ?? 'school_export_stage');
  const integration = opts.storageIntegration ?? 'school_export_integration';
  const out = [
    ...(opts.schema ? [`CREATE SCHEMA IF NOT EXISTS ${opts.schema}`] : []),
    `CREATE STAGE IF NOT EXISTS ${stage} URL = ${sqlString(url)} STORAGE_INTEGRATION = ${integration} ${FILE_FORMAT}`,
    ...ddlStatements(plan, d),
  ];
  const copy = (table: string, selector: string): string =>
    `COPY INTO ${d.table(rawName(table))} FROM @${stage}/${table}/ ${selector} ${FILE_FORMAT} MATCH_BY_COLUMN_NAME = CASE_INSENSITIVE ON_ERROR = ABORT_STATEMENT`;
  if (manifests) {
    const rec = runRecords(plan, manifests, d, NOW);
    for (const t of plan.tables) {
      const files = (rec.filesByTable.get(t.name) ?? []).map((f) => f.path.slice(t.name.length + 1));
      for (const part of chunks(files.map(sqlString), MAX_STATEMENT_CHARS, MAX_FILES))
        out.push(copy(t.name, `FILES = (${part.join(', ')})`));
    }
    out.push(...rec.statements);
  } else {
    // Without manifests the copy takes every Parquet file of the folder: a file a crashed run
    // left there would load too, and full snapshots are not known (rows gone upstream stay).
    for (const t of plan.tables) out.push(copy(t.name, `PATTERN = '.*[.]parquet'`));
  }
  out.push(...mergeStatements(plan, d), markMerged(d, NOW));
  return out;
}
