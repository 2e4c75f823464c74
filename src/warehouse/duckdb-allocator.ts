/**
 * DuckDB allocates through its own copy of jemalloc, configured to keep pages it freed for about
 * a second before giving them back (dirty_decay_ms and muzzy_decay_ms 1000, and a muzzy page
 * still counts in RSS). A load frees and allocates in bursts (each statement's hash tables, each
 * batch of files read): at 10,000 schools, 100-150 MB of its process's RSS was such pages, held
 * by no table. With both decays at 0 they go back as they are freed.
 *
 * jemalloc reads DUCKDB_JE_MALLOC_CONF once, when DuckDB first allocates: it must be set before
 * the binding is loaded, and a process that loaded DuckDB before keeps its allocator as it was
 * (nothing changes but memory). A value the user set is kept (e.g. to restore jemalloc's default).
 */
export const ALLOCATOR_CONF_VAR = 'DUCKDB_JE_MALLOC_CONF';
export const ALLOCATOR_CONF = 'dirty_decay_ms:0,muzzy_decay_ms:0';

export function prepareDuckDbAllocator(env: NodeJS.ProcessEnv = process.env): void {
  if (env[ALLOCATOR_CONF_VAR] === undefined) env[ALLOCATOR_CONF_VAR] = ALLOCATOR_CONF;
}
