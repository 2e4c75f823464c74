import { stat } from 'node:fs/promises';
import { ConfigError } from '../errors.ts';
import type { Manifest } from '../manifest/types.ts';
import { RESOURCES, tableSchemas } from '../resources/index.ts';
import { openSink, parseDest, type S3SinkOptions, type Sink } from '../sink/index.ts';
import type { TableSchema } from '../table.ts';
import { loadIntoDuckDb, type LoadResult } from './duckdb-load.ts';
import { pendingManifests, readManifest } from './manifests.ts';
import { renderSql, type RenderOptions } from './render.ts';

/**
 * What `school-export warehouse load|sql` do, for the CLI to call after parsing flags:
 *   warehouse load --dest DIR|s3://... --into duckdb:PATH [--s3-endpoint URL]
 *   warehouse sql --dialect bigquery|snowflake|duckdb --dest gs://...|s3://...|DIR
 *                 [--dataset NAME] [--manifests-from DIR|s3://...] [--after RUN_ID]
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
  onProgress?: (msg: string) => void;
}): Promise<LoadResult> {
  const m = /^duckdb:(.+)$/.exec(opts.into);
  if (!m) throw new ConfigError(`--into ${opts.into}: write it as duckdb:PATH (the DuckDB database file to create or update)`);
  const sink = await openExisting(opts.dest, opts.s3);
  try {
    return await loadIntoDuckDb({
      sink,
      dbPath: m[1],
      tables: opts.tables ?? builtinTables(),
      ...(opts.onProgress ? { onProgress: opts.onProgress } : {}),
    });
  } finally {
    await sink.close();
  }
}

export async function warehouseSql(opts: {
  dialect: RenderOptions['dialect'];
  dest: string;
  dataset?: string;
  /** Where to read the manifests when --dest is not readable here (gs://): a local copy or s3://. */
  manifestsFrom?: string;
  /** Only runs after this run_id (those already loaded into the warehouse are left out). */
  after?: string;
  s3?: S3SinkOptions;
  tables?: TableSchema[];
}): Promise<string> {
  const readable = opts.manifestsFrom ?? (/^gs:\/\//.test(opts.dest) ? undefined : opts.dest);
  let manifests: Manifest[] | undefined;
  if (readable !== undefined) {
    const sink = await openExisting(readable, opts.s3);
    try {
      manifests = [];
      for (const p of await pendingManifests(sink, new Set())) {
        if (opts.after === undefined || p.runId > opts.after) manifests.push(await readManifest(sink, p.path, p.runId));
      }
    } finally {
      await sink.close();
    }
  }
  return renderSql({
    dialect: opts.dialect,
    location: opts.dest,
    tables: opts.tables ?? builtinTables(),
    ...(opts.dataset ? { dataset: opts.dataset } : {}),
    ...(manifests ? { manifests } : {}),
  });
}

/** Loading reads an export: a local directory that does not exist is a mistake, not an empty export. */
async function openExisting(dest: string, s3?: S3SinkOptions): Promise<Sink> {
  const parsed = parseDest(dest);
  if (parsed.kind === 'local') {
    const st = await stat(parsed.dir).catch(() => undefined);
    if (!st?.isDirectory()) throw new ConfigError(`--dest ${parsed.dir} is not an export directory; give the directory a run wrote`);
  }
  return openSink(dest, s3 ? { s3 } : {});
}
