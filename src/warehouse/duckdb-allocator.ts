/**
 * DuckDB's settings chosen by the size of a load: its allocator, and for the smallest its threads.
 *
 * DuckDB allocates through its own copy of jemalloc, which keeps the pages it freed for about a
 * second before giving them back (and a "muzzy" page still counts in RSS). How a load should
 * set it depends on its size (`DUCKDB_JE_MALLOC_CONF`, read once, when DuckDB first allocates: it
 * must be set before the binding is loaded, and a process that loaded DuckDB before keeps its
 * allocator as it was; nothing changes but memory and speed):
 *
 * - A big load returns freed pages at once (decays 0). A load frees and allocates in bursts (each
 *   statement's hash tables, each batch of files read): in the first load of a full night of
 *   10,000 schools, 40-100 MB of the peak was such pages, held by no table (327-348 MB peak with
 *   decays 0; 401-430 with 20 or 100 ms in DuckDB's two arenas, 381-395 in one: at or over the 400
 *   MB bound of issue 19). It costs time: every allocation faults its pages in again.
 * - A small load keeps them (jemalloc's default decay) in one arena instead of DuckDB's two. Its
 *   statements' fixed work dominates (a merge of 1,440 rows allocated 148 MB: window buffers sized
 *   by columns, not rows), so returning pages at once made it 2-3 times slower: 6 sandbox schools
 *   7.2 -> 3.2 s; 400 small schools (4,000 tasks) 12.0 -> 6.7 s at 291-296 MB peak (225 MB);
 *   two schools of 30,000 achievements (183,907 rows) 17.2 -> 5.5 s at 300 MB (271-276 MB). Of
 *   40,000 each (about 245,000 rows): 6.4-7.5 s at 317-321 MB in one arena, 384-399 MB in two.
 *
 * The size is the newest export run's (what a night writes): its tasks and rows, from its run
 * manifest's summary, times the shard count for one shard of a sharded night. Unknown (no run
 * manifest yet, an older layout) counts as big. A value the user set is kept (e.g.
 * `dirty_decay_ms:1000,muzzy_decay_ms:1000`, jemalloc's own, for speed where memory is plenty).
 */
import { byRun, readHeader, runTotalsSize, type ManifestDoc, type ManifestSource } from '../manifest/layout.ts';

export const ALLOCATOR_CONF_VAR = 'DUCKDB_JE_MALLOC_CONF';
/** A big load: freed pages go back at once. */
export const RETURN_AT_ONCE = 'dirty_decay_ms:0,muzzy_decay_ms:0';
/** A small load: one arena, jemalloc's default decay. */
export const KEEP_BRIEFLY = 'narenas:1';
/** The largest run a load treats as small (measured up to 4,000 tasks, and 245,000 rows: see above). */
export const SMALL_RUN = { tasks: 5_000, rows: 200_000 };

/** How many runs back, from the newest, a load looks for an export run's summary. */
const LOOK_BACK = 5;

export interface RunSize {
  tasks: number;
  rows: number;
}

/** The allocator setting for a load whose newest export run has this size (undefined: unknown). */
export function allocatorConfFor(size: RunSize | undefined): string {
  return within(size, SMALL_RUN) ? KEEP_BRIEFLY : RETURN_AT_ONCE;
}

/**
 * A load of a few schools' changes (a night of a handful of schools, or one school's refresh),
 * which DuckDB runs on one thread: its time is each statement's fixed work, which threads do not
 * split. Measured, a first load of 2 sandbox schools (273 statements): alone on 2 cores, one
 * thread as fast as two (1.34 against 1.36 s); two such loads at once, 1.71 against 2.08 s
 * (incremental 1.05 against 1.23 s). Bigger loads split their data: at 400 schools one thread
 * was 10-13% slower, and at 184,000 rows of 2 schools the incremental load 10% slower.
 */
export const FEW_CHANGES = { tasks: 200, rows: 20_000 };

/** DuckDB's threads for a load of this size: one for a few schools' changes, else as the caller says (default: one per core). */
export function threadsFor(size: RunSize | undefined, asked: number | undefined): number | undefined {
  if (asked !== undefined) return asked;
  return within(size, FEW_CHANGES) ? 1 : undefined;
}

/** Whether a known size is at most the bound in tasks and in rows. */
function within(size: RunSize | undefined, bound: RunSize): boolean {
  return size !== undefined && size.tasks <= bound.tasks && size.rows <= bound.rows;
}

/** Sets the allocator for this process's DuckDB, unless the environment already sets it. */
export function prepareDuckDbAllocator(conf: string, env: NodeJS.ProcessEnv = process.env): void {
  if (env[ALLOCATOR_CONF_VAR] === undefined) env[ALLOCATOR_CONF_VAR] = conf;
}

/**
 * Tasks and rows of the newest export run among the destination's listed manifests (a compaction
 * or a run killed before its run manifest is passed over), or undefined when none of the last
 * few runs says.
 */
export async function newestExportSize(src: ManifestSource, listed: ManifestDoc[]): Promise<RunSize | undefined> {
  const runs = byRun(listed);
  for (const run of runs.slice(-LOOK_BACK).reverse()) {
    if (!run.manifest) continue;
    const head = await readHeader(src, run.manifest).catch(() => undefined);
    if (!head || head.version !== 2) return undefined; // an older layout: no summary to size it by
    if (head.kind !== 'export') continue;
    // a summary the run manifest lacks sizes nothing (the load itself reports a malformed manifest)
    if (typeof head.summary?.tasks !== 'object' || typeof head.summary.rows !== 'object') return undefined;
    const { tasks, rows } = runTotalsSize(head.summary);
    // one shard of N: the night, whose pairs the load merges together, is about N times as big
    const shards = Math.max(1, head.shard?.count ?? 1);
    return { tasks: tasks * shards, rows: rows * shards };
  }
  return undefined;
}
