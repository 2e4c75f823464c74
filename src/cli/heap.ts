import { setFlagsFromString } from 'node:v8';

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

/** Sets V8's heap growth for this process, unless node was started with its own (NODE_OPTIONS cannot carry it). */
export function boundHeapGrowth(): void {
  if (process.execArgv.some((a) => /heap[-_]growing[-_]percent/.test(a))) return;
  setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
}
