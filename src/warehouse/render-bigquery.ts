import { ConfigError } from '../errors.ts';
import type { Manifest } from '../manifest/types.ts';
import { bigqueryDialect, sqlString } from './dialects.ts';
import { ddlStatements, mergeStatements } from './merge-sql.ts';
import { rawName, type Plan } from './plan.ts';
import { chunks, markMerged, MAX_STATEMENT_CHARS, runRecords } from './run-records.ts';

/**
 * BigQuery: datasets' tables, LOAD DATA of the Parquet files into _raw_<table> (appends; a type
 * mismatch fails the load instead of nulling values), then the MERGE per table. The rows carry
 * _school_id and _region, so the region=/school_id= folders are not read as hive partitions.
 */
const NOW = 'CURRENT_TIMESTAMP()';
// A load job accepts at most 10,000 source URIs.
const MAX_URIS = 10_000;

export function renderBigQueryStatements(plan: Plan, location: string, dataset: string, manifests?: readonly Manifest[]): string[] {
  if (!location.startsWith('gs://')) {
    throw new ConfigError(
      `BigQuery loads from Cloud Storage: --dest must be gs://bucket/prefix (copy an S3 export with the Storage Transfer Service first), got ${location}`,
    );
  }
  if (!/^gs:\/\/[a-z0-9][a-z0-9._-]{1,220}[a-z0-9](\/|$)/.test(location)) {
    throw new ConfigError(`--dest ${location}: not a valid Cloud Storage bucket name (3-222 lower-case letters, digits, . _ -)`);
  }
  if (!/^[A-Za-z0-9_]{1,1024}$/.test(dataset)) throw new ConfigError(`BigQuery dataset "${dataset}": letters, digits and _ only`);
  const d = bigqueryDialect(dataset);
  const base = location.replace(/\/+$/, '');
  const out = [`CREATE SCHEMA IF NOT EXISTS \`${dataset}\``, ...ddlStatements(plan, d)];
  const loadInto = (table: string, uris: string[]): string =>
    `LOAD DATA INTO ${d.table(rawName(table))} FROM FILES (format = 'PARQUET', uris = [${uris.map(sqlString).join(', ')}])`;
  if (manifests) {
    const rec = runRecords(plan, manifests, d, NOW);
    for (const t of plan.tables) {
      const files = rec.filesByTable.get(t.name) ?? [];
      const uris = files.map((f) => `${base}/${f.path}`);
      for (const part of chunks(uris, MAX_STATEMENT_CHARS, MAX_URIS)) out.push(loadInto(t.name, part));
    }
    out.push(...rec.statements);
  } else {
    // Without manifests the load globs each table's folder: a file a crashed run left there
    // would load too, and full snapshots are not known (rows gone upstream stay).
    for (const t of plan.tables) out.push(loadInto(t.name, [`${base}/${t.name}/*.parquet`]));
  }
  out.push(...mergeStatements(plan, d), markMerged(d, NOW));
  return out;
}

/** JSON schema files for `bq mk --table` / `bq load --schema`, one per table. */
export function bigQuerySchemaFiles(plan: Plan, dataset = 'school_export'): Record<string, string> {
  const d = bigqueryDialect(dataset);
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
