import { listRuns, readRun } from '../manifest/layout.ts';
import type { ManifestTask } from '../manifest/types.ts';
import type { Sink } from '../sink/types.ts';
import { taskKey } from './run-tally.ts';

/**
 * How big each task was the last time it ran, from the destination's recent run manifests: the
 * live display's per-task percentage and the run's ETA. Records read by a task are the rows of its
 * resource's own table (one row per record; child tables are extra rows from the same records).
 * Best effort: an unreadable manifest only means fewer estimates. Reads the newest few runs of
 * the same shard, never every manifest.
 */
export type Estimates = Map<string, { full?: number; incremental?: number }>;

const RUNS_READ = 3;

export async function loadEstimates(sink: Sink, runId: string): Promise<Estimates> {
  const shard = /-s\d+of\d+$/.exec(runId)?.[0] ?? '';
  const finals = (await listRuns(sink))
    .filter((r) => r.manifest && r.runId !== runId && (/-s\d+of\d+$/.exec(r.runId)?.[0] ?? '') === shard)
    .reverse()
    .slice(0, RUNS_READ);
  const out: Estimates = new Map();
  for (const run of finals) {
    // best effort: an unreadable run only means fewer estimates
    const tasks = await readRun(sink, run).then(
      (r) => r.tasks,
      () => [],
    );
    // newest run first: a task's size is taken from the latest run that committed it in that mode
    const sizes = new Map<string, { mode: ManifestTask['mode']; records: number }>();
    for (const t of tasks) {
      if (t.status !== 'committed' || t.error) continue;
      const k = taskKey(t.school_id, t.resource);
      const s = sizes.get(k) ?? { mode: t.mode, records: 0 };
      s.records += t.rows?.[t.resource] ?? 0; // checkpoint pieces of one read add up
      sizes.set(k, s);
    }
    for (const [k, s] of sizes) {
      const e = out.get(k) ?? {};
      e[s.mode] ??= s.records;
      out.set(k, e);
    }
  }
  return out;
}

/** The previous size of a task in the same mode (a full read is not an incremental one's estimate). */
export function expectedRecords(
  est: Estimates | undefined,
  school: string,
  resource: string,
  mode: 'full' | 'incremental',
): number | undefined {
  return est?.get(taskKey(school, resource))?.[mode];
}

/**
 * Seconds left: the remaining tasks' previous sizes (less what the active ones have read) at this
 * run's records/s, and no less than the remaining tasks at this run's tasks/s (many small tasks
 * cost requests, not records). Tasks without an estimate count as the average of those with one.
 * undefined while nothing is known to estimate from.
 */
export function etaSeconds(o: {
  elapsedSeconds: number;
  recordsRead: number;
  done: number;
  remainingTasks: number;
  /** Remaining tasks that have begun or are planned: what each read so far and its previous size. */
  remaining: { read: number; expected?: number }[];
}): number | undefined {
  if (o.remainingTasks <= 0) return 0;
  if (o.elapsedSeconds <= 0) return undefined;
  const byTasks = o.done > 0 ? o.remainingTasks / (o.done / o.elapsedSeconds) : undefined;
  const known = o.remaining.filter((r) => r.expected !== undefined);
  let byRecords: number | undefined;
  if (known.length && o.recordsRead > 0) {
    const average = known.reduce((a, r) => a + r.expected!, 0) / known.length;
    const left = o.remaining.reduce((a, r) => a + Math.max(0, (r.expected ?? average) - r.read), 0);
    const unlisted = Math.max(0, o.remainingTasks - o.remaining.length) * average;
    byRecords = (left + unlisted) / (o.recordsRead / o.elapsedSeconds);
  }
  if (byTasks === undefined) return byRecords;
  return byRecords === undefined ? byTasks : Math.max(byTasks, byRecords);
}
