import { subscribe } from 'node:diagnostics_channel';
import { PerformanceObserver } from 'node:perf_hooks';
import type { Worker } from 'node:worker_threads';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import type { Format } from '../format/types.ts';

/**
 * How far V8 lets the old generation grow past what a full collection left alive before it
 * collects again: here by 100%. By default V8 chooses the factor itself, up to 4x for a small
 * heap, and an export's live heap is small (20-40 MB) while it allocates page after page of
 * buffers and parsed rows that outlive a scavenge and die soon after: most of its peak RSS was
 * garbage waiting for that limit.
 *
 * Measured (peak RSS; CPU): the wide shape, 4 schools x 30,000 achievements, NDJSON on one thread:
 * 232-236 MB by default, 206-212 MB at 100%, 198-201 MB at 50%, 191-196 MB at 20%. The 2,000-school
 * incremental night: 297-300 MB by default, 218-220 MB at 100%, 201 MB at 50%, 181-184 MB at 20%;
 * its CPU a school 16.7-17.7 ms by default, 16.6-17.2 ms at 100%, 18.3-18.6 at 50%, 20.7-21.1 ms
 * at 20% (a night of thousands of small tasks keeps many small objects alive across awaits, and
 * each extra full collection marks them all). 100% is the smallest that cost no CPU.
 */
export const HEAP_GROWING_PERCENT = 100;

/**
 * The same, once a run reads large pages (boundForLargeReads): 50%. Such a run's peak is pages of
 * parsed rows, not thousands of small tasks kept alive across awaits, so the extra full
 * collections mark little. Measured (2026-11-29, the wide shape, 4 schools x 30,000 achievements,
 * 4 interleaved pairs, 100% against 50%): peak RSS NDJSON 193-196 / 183-185 MB, CSV 187-200 /
 * 180-184 MB, Parquet 190-210 / 175-183 MB; CPU (medians) 9.43 / 9.97 s, 10.17 / 10.33 s,
 * 13.22 / 13.65 s, +2-6%.
 */
export const LARGE_READ_HEAP_GROWING_PERCENT = 50;

/**
 * The young generation (V8's new space, two semispaces) this process lets grow to: what Node 20
 * gives it on its own. V8 sizes its limit from the machine's memory, and Node 24's V8 gives it four
 * times Node 20's here (24 GiB): 128 MB against 32 MB. A run on one thread filled it with pages' parsed
 * rows that die young anyway.
 *
 * Measured on Node 24, the wide shape (4 schools x 30,000 achievements), peak RSS uncapped / at
 * 32 MB: NDJSON 316-338 / 238-263 MB, Parquet with `--workers 0` 281-301 / 241-248 MB (with the
 * pool 243-262 / 252-256: a worker's start undid the cap then, and the cap now steps aside while
 * workers run, below). CPU: -1% to +13%
 * a run, +6% on average over 8 pairs (this shared machine's noise is of that size). On Node 20 the
 * cap is V8's own limit: nothing changes there.
 *
 * Not lower for every run: at 8 MB NDJSON's CPU rose by 18-23% and CSV's by 9-31% (their rows'
 * objects survive more scavenges). Parquet's did not, and its peak fell by 30-40 MB: a Parquet run
 * takes 8 MB (Format.youngGenerationMb, src/format/parquet.ts). A cap of 16 MB does not hold: the
 * young generation overshot to 32 MB in 3 of 4 Parquet runs, and in 2 of 3 NDJSON runs on one
 * thread (one burst of collections doubles it twice before the first is reported).
 */
export const YOUNG_GENERATION_MB = 32;

/** What the installed command sets for its whole process before any command (bench/export-child.mjs does the same). */
export function boundHeap(): void {
  boundHeapGrowth();
  boundYoungGeneration(YOUNG_GENERATION_MB * 2 ** 20);
}

/**
 * Sets V8's heap growth for this process, unless node was started with its own (NODE_OPTIONS cannot
 * carry it). V8 reads it each time it sets the next limit, after a full collection.
 */
export function boundHeapGrowth(percent = HEAP_GROWING_PERCENT): void {
  if (process.execArgv.some((a) => /heap[-_]growing[-_]percent/.test(a))) return;
  setFlagsFromString(`--heap-growing-percent=${percent}`);
}

/** The cap in force: boundYoungGeneration's latest, read after each collection. */
let youngCapBytes = 0;
let watching = false;
/** Worker threads running: the flag is theirs too, so the cap steps aside while any runs. */
let workers = 0;

/**
 * Keeps the young generation at or below `capBytes`, unless node was started with a size of its
 * own (`--max-semi-space-size`, on the command line or in NODE_OPTIONS). Its limit is fixed when
 * the process starts, and an installed command cannot pass flags to its own process (a shebang's
 * `env -S` is missing from BusyBox's env, so from Alpine images). What V8 reads at run time is how
 * much the young generation grows after a scavenge that found many survivors
 * (`--semi-space-growth-factor`): 1 stops it. So growth is off, and after each collection it is
 * allowed again only while the young generation is below the cap. Collections are reported after
 * the fact, so a burst of them can grow it past the cap before growth stops (one doubling seen on
 * Node 20, a few smaller steps on Node 24). A later call sets another cap (a run, once a task reads
 * a large page: boundYoungGenerationFor); it does not shrink what has grown already.
 *
 * The flag is the process's, not this thread's: V8 puts it back to 2 when it sets up a worker
 * thread's heap, and while it is 1 a worker's young generation cannot grow either. Kept at its
 * first size, the Parquet pool's worker cost 23-34% more CPU (measured, wide shape, 3 runs). So
 * while worker threads run (Node's `worker_threads` diagnostics channel tells when one starts),
 * the flag is left at V8's default: their own limit bounds them (src/encode/pool.ts), and this
 * thread's young generation may grow to V8's.
 */
export function boundYoungGeneration(capBytes: number): void {
  const own = (a: string) => /semi[-_]space/.test(a);
  if (process.execArgv.some(own) || (process.env.NODE_OPTIONS ?? '').split(/\s+/).some(own)) return;
  youngCapBytes = capBytes;
  allowGrowth();
  if (watching) return;
  watching = true;
  new PerformanceObserver(allowGrowth).observe({ entryTypes: ['gc'] });
  subscribe('worker_threads', (message) => {
    workers++;
    setGrowthFactor(2);
    (message as { worker: Worker }).worker.once('exit', () => workers--);
  });
}

/** After every collection, not only when it changes: a worker's start resets it (above). */
function allowGrowth(): void {
  if (workers === 0) setGrowthFactor(youngGenerationBytes() < youngCapBytes ? 2 : 1);
}

/** About 8 us a call. */
function setGrowthFactor(factor: 1 | 2): void {
  setFlagsFromString(`--semi-space-growth-factor=${factor}`);
}

/**
 * A run's young generation: its format's own cap (Format.youngGenerationMb), where it has one.
 * The command line applies it once a task reads a large page (RunDeps.onLargePage): the cap is
 * for large reads, whose rows outlive scavenges. A night of small tasks keeps the process's 32 MB:
 * at Parquet's 8 MB its 2,000-school incremental night took 1,050 scavenges (2.7-3.3 s) against
 * 250 (1.3-1.6 s) at 32 MB, about 0.7 ms of CPU a school.
 */
export function boundYoungGenerationFor(format: Pick<Format, 'youngGenerationMb'>): void {
  if (format.youngGenerationMb !== undefined) boundYoungGeneration(format.youngGenerationMb * 2 ** 20);
}

/** What a run sets once a task reads a large page (RunDeps.onLargePage): its heap growth and the format's young generation. */
export function boundForLargeReads(format: Pick<Format, 'youngGenerationMb'>): void {
  boundHeapGrowth(LARGE_READ_HEAP_GROWING_PERCENT);
  boundYoungGenerationFor(format);
}

/** The young generation's current size (both semispaces), bytes. */
export function youngGenerationBytes(): number {
  return getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size ?? 0;
}
