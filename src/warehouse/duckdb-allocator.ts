/**
 * DuckDB allocates through its own copy of jemalloc, configured to keep pages it freed for about
 * a second before giving them back (dirty_decay_ms and muzzy_decay_ms 1000, and a muzzy page
 * still counts in RSS). A load frees and allocates in bursts (each statement's hash tables, each
 * batch of files read): in the first load of a full night of 10,000 schools, 70-90 MB of the
 * process's peak RSS was such pages, held by no table (peak 435-445 MB -> 353-363 MB with both
 * decays at 0). Returning them at once costs CPU (page faults when they are used again): about
 * 10% on that load, but ~25% on an incremental night's load of 2,000 schools, which peaks around
 * 250-310 MB either way. So only a load into a new warehouse, which applies everything the
 * destination holds, returns freed pages at once.
 *
 * jemalloc reads DUCKDB_JE_MALLOC_CONF once, when DuckDB first allocates: it must be set before
 * the binding is loaded, and a process that loaded DuckDB before keeps its allocator as it was
 * (nothing changes but memory). A value the user set is kept (set it to ALLOCATOR_CONF to return
 * freed pages at once in every load, e.g. a load of many nights at once).
 */
export const ALLOCATOR_CONF_VAR = 'DUCKDB_JE_MALLOC_CONF';
export const ALLOCATOR_CONF = 'dirty_decay_ms:0,muzzy_decay_ms:0';

/** `newWarehouse`: the load creates the database (everything pending is applied at once). */
export function prepareDuckDbAllocator(newWarehouse: boolean, env: NodeJS.ProcessEnv = process.env): void {
  if (newWarehouse && env[ALLOCATOR_CONF_VAR] === undefined) env[ALLOCATOR_CONF_VAR] = ALLOCATOR_CONF;
}
