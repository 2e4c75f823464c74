/**
 * DuckDB allocates through its own copy of jemalloc, configured to keep pages it freed for about
 * a second before giving them back (dirty_decay_ms and muzzy_decay_ms 1000, and a muzzy page
 * still counts in RSS). A load frees and allocates in bursts (each statement's hash tables, each
 * batch of files read): in the first load of a full night of 10,000 schools, 70-90 MB of the
 * process's peak RSS was such pages, held by no table (peak 435-445 MB -> 353-363 MB with both
 * decays at 0), and the incremental night's load of 10,000 schools that follows it peaked at
 * 401-416 MB by default against 327-336 MB with them (two interleaved rounds each). So every load
 * returns freed pages at once. It costs CPU (page faults when the pages are used again): about 10%
 * on the full night's load, 5-12% of wall on that incremental load (36-39 s -> 41-44 s), and ~25%
 * on the 2,000-school incremental load, a load already under 11 s whose peak it does not change.
 *
 * jemalloc reads DUCKDB_JE_MALLOC_CONF once, when DuckDB first allocates: it must be set before
 * the binding is loaded, and a process that loaded DuckDB before keeps its allocator as it was
 * (nothing changes but memory). A value the user set is kept (e.g. `dirty_decay_ms:1000,
 * muzzy_decay_ms:1000`, jemalloc's own, for speed where memory is plenty).
 */
export const ALLOCATOR_CONF_VAR = 'DUCKDB_JE_MALLOC_CONF';
export const ALLOCATOR_CONF = 'dirty_decay_ms:0,muzzy_decay_ms:0';

export function prepareDuckDbAllocator(env: NodeJS.ProcessEnv = process.env): void {
  if (env[ALLOCATOR_CONF_VAR] === undefined) env[ALLOCATOR_CONF_VAR] = ALLOCATOR_CONF;
}
