import { ConfigError } from '../errors.ts';
import { RESOURCES, tableSchemas } from '../resources/index.ts';
import { openSink, type S3SinkOptions, type Sink } from '../sink/index.ts';
import type { TableSchema } from '../table.ts';
import type { ResourceSpec } from '../resources/index.ts';
import { renderDbtSources, type DbtOptions } from './dbt.ts';
import type { LoadResult } from './duckdb-load.ts';
import { listDocs, parseDoc } from '../manifest/layout.ts';
import { renderSql, type RenderOptions } from './render.ts';
import { parseSupersede } from './supersede.ts';

/**
 * What `school-export warehouse load|sql|dbt` do, for the CLI to call after parsing flags:
 *   warehouse load --dest DIR|s3://... --into duckdb:PATH [--s3-endpoint URL] [--require-pseudonymised] [--supersede RUN/SCHOOL/TABLE ...]
 *   warehouse sql --dialect bigquery|snowflake|duckdb --dest gs://...|s3://...|DIR [--dataset NAME] [--require-pseudonymised]
 *   warehouse manifests --dest DIR|s3://...   (rewrites manifests of older versions on one line)
 *   warehouse dbt --dialect bigquery|snowflake|duckdb [--dataset NAME] [--source-name NAME] [--freshness-hours N]
 * Nothing here loads DuckDB until `warehouse load` runs.
 */

/** The built-in resources' tables; a pipeline with generic resources passes its own. */
export function builtinTables(): TableSchema[] {
  return RESOURCES.flatMap((r) => tableSchemas(r));
}

export async function warehouseLoad(opts: {
  dest: string;
  into: string;
  s3?: S3SinkOptions;
  tables?: TableSchema[];
  requirePseudonymised?: boolean;
  /** RUN/SCHOOL/TABLE (each may list several, comma-separated): tasks to supersede (supersede.ts). */
  supersede?: string[];
  onProgress?: (msg: string) => void;
}): Promise<LoadResult> {
  const m = /^duckdb:(.+)$/.exec(opts.into);
  if (!m) throw new ConfigError(`--into ${opts.into}: write it as duckdb:PATH (the DuckDB database file to create or update)`);
  const tables = opts.tables ?? builtinTables();
  // checked before the export or the database is opened
  const supersede = parseSupersede(
    opts.supersede ?? [],
    tables.map((t) => t.name),
  );
  const sink = await openExisting(opts.dest, opts.s3);
  try {
    const { loadIntoDuckDb } = await import('./duckdb-load.ts');
    return await loadIntoDuckDb({
      sink,
      dbPath: m[1],
      tables,
      ...(supersede.length ? { supersede } : {}),
      ...(opts.requirePseudonymised ? { requirePseudonymised: true } : {}),
      ...(opts.onProgress ? { onProgress: opts.onProgress } : {}),
    });
  } finally {
    await sink.close();
  }
}

/**
 * The static load script for a warehouse. It does not depend on what has been exported or
 * loaded: render it once, run it after every export.
 */
export function warehouseSql(opts: Omit<RenderOptions, 'tables'> & { tables?: TableSchema[] }): string {
  return renderSql({ ...opts, tables: opts.tables ?? builtinTables() });
}

/** The dbt sources file for the tables of these resources (default: the built-in ones). */
export function warehouseDbt(opts: Omit<DbtOptions, 'resources'> & { resources?: ResourceSpec[] }): string {
  return renderDbtSources({ ...opts, resources: opts.resources ?? RESOURCES });
}

/**
 * Rewrites manifests written before they were one line each (an export from an older version)
 * as one line of JSON, the form warehouses read them in. Same content; each file is replaced
 * atomically. Returns how many were rewritten.
 */
export async function compactManifests(opts: { dest: string; s3?: S3SinkOptions }): Promise<number> {
  const sink = await openExisting(opts.dest, opts.s3);
  let rewritten = 0;
  try {
    for (const doc of await listDocs(sink)) {
      const buf = await sink.read(doc.path);
      if (buf === undefined || !buf.toString('utf8').trimEnd().includes('\n')) continue;
      const manifest = parseDoc(buf, doc.path, doc.runId);
      await sink.writeAtomic(doc.path, JSON.stringify(manifest) + '\n');
      rewritten++;
    }
  } finally {
    await sink.close();
  }
  return rewritten;
}

/** Loading reads an export: a local directory that does not exist is a mistake, not an empty export. */
async function openExisting(dest: string, s3?: S3SinkOptions): Promise<Sink> {
  return openSink(dest, { ...(s3 ? { s3 } : {}), readOnly: true });
}
