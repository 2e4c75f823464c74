import { ConfigError } from '../errors.ts';
import type { Manifest } from '../manifest/types.ts';
import type { TableSchema } from '../table.ts';
import { buildPlan } from './plan.ts';
import { renderBigQueryStatements } from './render-bigquery.ts';
import { renderDuckDb } from './render-duckdb.ts';
import { renderSnowflakeStatements, type SnowflakeOptions } from './render-snowflake.ts';

export interface RenderOptions {
  dialect: 'bigquery' | 'snowflake' | 'duckdb';
  /** Where the export is: gs://bucket/prefix (BigQuery), s3:// | gs:// | azure:// (Snowflake), a directory (DuckDB). */
  location: string;
  tables: TableSchema[];
  /** BigQuery dataset (default school_export) / Snowflake schema (default: the session's). */
  dataset?: string;
  /**
   * The manifests to load, when the caller can read them: the load then names exactly their
   * committed files, records the runs and the full snapshots. Without them it globs each table's
   * folder (see the comment in the rendered SQL).
   */
  manifests?: readonly Manifest[];
  snowflake?: Omit<SnowflakeOptions, 'schema'>;
}

/** The statements, without terminators: tests parse them one by one. */
export function renderSqlStatements(opts: RenderOptions): string[] {
  const plan = buildPlan(opts.tables);
  switch (opts.dialect) {
    case 'bigquery':
      return renderBigQueryStatements(plan, opts.location, opts.dataset ?? 'school_export', opts.manifests);
    case 'snowflake':
      return renderSnowflakeStatements(
        plan,
        opts.location,
        { ...opts.snowflake, ...(opts.dataset ? { schema: opts.dataset } : {}) },
        opts.manifests,
      );
    case 'duckdb':
      return renderDuckDb(plan, opts.location, opts.manifests);
    default:
      throw new ConfigError(`unknown SQL dialect ${String(opts.dialect)}: use bigquery, snowflake or duckdb`);
  }
}

export function renderSql(opts: RenderOptions): string {
  const header = [
    `-- school-export: ${opts.dialect} load of ${opts.location}`,
    opts.manifests
      ? `-- Runs: ${
          opts.manifests
            .map((m) => m.run_id)
            .sort()
            .join(', ') || '(none)'
        }`
      : '-- No manifests given: loads glob each table folder; full snapshots are not applied.',
  ];
  return [...header, ...renderSqlStatements(opts).map((s) => `${s};\n`)].join('\n');
}
