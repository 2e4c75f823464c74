import { rmSync } from 'node:fs';
import { duckdbSql } from './render-duckdb.ts';
import type { SqlDialect } from './sql-dialect.ts';

/**
 * The load's working tables (the manifest tables, the pending tasks and files: the nightly SQL's
 * temporary tables) are in a database of their own, attached for the load and removed after it:
 * stored compressed, and evicted by DuckDB as it needs the memory, where TEMP tables are held
 * (or spilled) uncompressed. At 10,000 schools they are ~220,000 manifest rows, and as TEMP
 * tables they held 64 MB of DuckDB's memory limit, 84 MB once the pending sets were made.
 * The staging tables stay TEMP: each lives for one batch, and it is not worth writing its rows
 * twice (the write-ahead log, then the raw table).
 */
export const SCRATCH = '_school_export_scratch';

const base = duckdbSql();

/** A table of the scratch database, as SQL text. */
export function inScratch(table: string): string {
  return `${base.ident(SCRATCH)}.${base.ident(table)}`;
}

/** DuckDB's dialect with the nightly SQL's temporary tables made in the scratch database. */
export const scratchDialect: SqlDialect = {
  ...base,
  temp: inScratch,
  createTemp: (name, select) => `CREATE OR REPLACE TABLE ${inScratch(name)} AS ${select}`,
};

/** The scratch database's file: next to the warehouse (the same disk and permissions), or in memory with it. */
export function scratchPath(dbPath: string): string {
  return dbPath === '' || dbPath.startsWith(':memory:') ? ':memory:' : `${dbPath}.load-scratch`;
}

/** The scratch file and its write-ahead log, if a load left them (nothing for one in memory). */
export function removeScratch(path: string): void {
  if (path === ':memory:') return;
  for (const p of [path, `${path}.wal`]) rmSync(p, { force: true });
}
