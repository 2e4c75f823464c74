import { ConfigError } from '../errors.ts';
import { isSafeId } from '../ids.ts';
import { acquireLease } from '../manifest/lease.ts';
import { newRunId } from '../manifest/run-id.ts';
import { markRunEnded, markRunStarted, sweepLeftovers } from '../pipeline/leftovers.ts';
import { openSink, type S3SinkOptions, type Sink } from '../sink/index.ts';
import { compact, type CompactEvent, type CompactResult, type CompactStep } from './compact.ts';

/**
 * `school-export compact`: checks its input, opens the destination as a run does, holds the
 * whole destination's lease while it works (a run of any shard waits for it, and it refuses to
 * start while one runs), sweeps what dead runs left, compacts, and lets go.
 */
export interface CompactCommandOptions {
  dest: string;
  s3?: S3SinkOptions;
  olderThanDays?: number;
  schools?: string[];
  tables?: string[];
  /** Table names `--tables` may name (the built-in resources' and the pipeline's). */
  knownTables: readonly string[];
  smallFileBytes?: number;
  /** Compacted files per batch of manifest parts (default 500; tests stop between batches). */
  batchFiles?: number;
  now?: () => Date;
  onProgress?: (e: CompactEvent) => void;
  step?: (step: CompactStep, detail: { paths: string[] }) => Promise<void> | void;
  /** Opens the sink (tests pass one); default openSink. */
  open?: (dest: string, owner: string) => Promise<Sink>;
}

/** Bad input, found before anything is written (exit 2). */
export function checkCompactInput(o: Pick<CompactCommandOptions, 'olderThanDays' | 'schools' | 'tables' | 'knownTables'>): void {
  if (o.olderThanDays !== undefined && !(Number.isFinite(o.olderThanDays) && o.olderThanDays >= 0)) {
    throw new ConfigError(`--older-than ${String(o.olderThanDays)}: expected a number of days, 0 or more`, 'E_USAGE');
  }
  for (const s of o.schools ?? []) {
    if (!isSafeId(s))
      throw new ConfigError(`--schools ${JSON.stringify(s).slice(0, 40)}: school ids are "A" followed by digits`, 'E_USAGE');
  }
  const known = new Set(o.knownTables);
  for (const t of o.tables ?? []) {
    if (!known.has(t)) {
      throw new ConfigError(
        `--tables ${JSON.stringify(t).slice(0, 60)}: not a table; use one of ${[...known].sort().join(', ')}`,
        'E_USAGE',
      );
    }
  }
}

export async function compactDestination(o: CompactCommandOptions): Promise<CompactResult> {
  checkCompactInput(o);
  const startedAt = (o.now ?? (() => new Date()))();
  const runId = newRunId(startedAt, undefined, 'compact');
  const sink = await (o.open ? o.open(o.dest, runId) : openSink(o.dest, { ...(o.s3 ? { s3: o.s3 } : {}), owner: runId, readOnly: true }));
  let done = false;
  try {
    // the whole destination's lease: runs of every shard layout defer to it (src/manifest/lease.ts)
    const lease = await acquireLease(sink, { runId, shard: { index: 0, count: 1 }, waitSeconds: 0 });
    try {
      await markRunStarted(sink, runId);
      await sweepLeftovers(sink);
      const result = await compact({
        sink,
        runId,
        startedAt,
        ...(o.olderThanDays !== undefined ? { olderThanDays: o.olderThanDays } : {}),
        ...(o.schools?.length ? { schools: new Set(o.schools) } : {}),
        ...(o.tables?.length ? { tables: new Set(o.tables) } : {}),
        ...(o.smallFileBytes !== undefined ? { smallFileBytes: o.smallFileBytes } : {}),
        ...(o.batchFiles !== undefined ? { batchFiles: o.batchFiles } : {}),
        ...(o.onProgress ? { onProgress: o.onProgress } : {}),
        ...(o.step ? { step: o.step } : {}),
      });
      done = true;
      return result;
    } finally {
      // A compaction that stopped keeps its marker: the next run or compaction sweeps the file it
      // may have written and not listed, as after a crash.
      if (done) await markRunEnded(sink, runId).catch(() => undefined);
      await lease.release().catch(() => undefined);
    }
  } finally {
    await sink.close();
  }
}
