import { byRun, listDocs, listedFiles, type ManifestDoc } from '../manifest/layout.ts';
import { isStale, readLeases } from '../manifest/lease.ts';
import type { Sink, TempEntry, TempScan } from '../sink/types.ts';

/** Killed runs already swept (outside _manifests/, which loaders read whole). */
const SWEPT_DIR = '_state/_swept/';
/** One marker per run in progress: a run killed before its first manifest part is known by it. */
const RUNS_DIR = '_state/_runs/';
const DAY_MS = 24 * 3600_000;
/**
 * A folder of one school (its data partitions, its snapshot ids). Only runs and compactions write
 * there, after their run marker: their leftovers are found through the marker (killedRuns). Every
 * other writer (the write probe, leases, the webhook receiver, manifests, `warehouse` commands)
 * writes outside them, so a night with no killed run walks the destination without entering them.
 */
const PER_SCHOOL_DIR = (name: string) => name.startsWith('school_id=');
/** When the whole destination was last walked for temp files. */
const FULL_SWEEP_RECORD = '_state/_full-sweep.json';
/**
 * How often the whole destination is walked even with no killed run: a temp file a living run
 * failed to remove (a disk error while cleaning up), or one written by an earlier version
 * (before run markers), goes within this time.
 */
export const FULL_SWEEP_EVERY_MS = 7 * DAY_MS;

/** Written once the run holds its lease: from here on a kill can leave files behind. */
export async function markRunStarted(sink: Sink, runId: string): Promise<void> {
  await sink.writeAtomic(`${RUNS_DIR}${runId}.json`, JSON.stringify({ run_id: runId }) + '\n');
}

/** Removed when the run ends in any way but a kill (a run that ends cleans up after itself). */
export async function markRunEnded(sink: Sink, runId: string): Promise<void> {
  await sink.remove([`${RUNS_DIR}${runId}.json`]);
}

/**
 * What runs that died left behind, removed by the next run once it holds its lease: temporary
 * files and unfinished S3 uploads of runs no longer holding a lease, and the data files a killed
 * run renamed into place but never listed in a manifest part (killed between the rename and the
 * part, the first part included): personal data no manifest names would otherwise stay for good.
 * Runs still holding a lease (other shards) are left alone, and so is a run whose parts cannot
 * all be read (nothing is removed on a guess; the next run tries again).
 *
 * Schools' folders are walked for temp files only when a run was killed, or once every
 * FULL_SWEEP_EVERY_MS: at 10,000 schools that walk read about 150,000 folders every night,
 * whatever had changed.
 */
export async function sweepLeftovers(sink: Sink, now = new Date()): Promise<SweepResult> {
  const docs = await listDocs(sink);
  const { killed, live } = await killedRuns(sink, docs, now);
  let result: SweepResult = {};
  if (killed.size > 0 || (await fullSweepDue(sink, now))) {
    await sweepDeadTemp(sink, live, now);
    // a destination no run has committed to yet keeps nothing (a run refused at its first
    // request leaves the destination as it found it): the run records the walk once it has
    if (docs.length > 0) await recordFullSweep(sink, now);
    else result = { unrecordedWalk: now };
  } else {
    await sweepDeadTemp(sink, live, now, { skipDir: PER_SCHOOL_DIR });
  }
  if (killed.size === 0) return result;
  const all = await sink.list('');
  for (const [runId, parts] of killed) await sweepUnlisted(sink, all, runId, parts);
  return result;
}

/**
 * Runs holding a live lease, read AFTER the listings they judge. A run takes its lease before it
 * writes its run marker or any temp file, so whatever a listing found of a running run, its lease
 * is in a read that follows. Read before, a run starting meanwhile (another shard) looked dead:
 * the sweep removed its run marker's temp file under it (seen in CI: the rename failed, ENOENT),
 * and could take its files for a killed run's.
 */
async function liveRuns(sink: Sink, now: Date): Promise<Set<string>> {
  return new Set((await readLeases(sink)).filter((l) => !isStale(l, now)).map((l) => l.run_id));
}

/**
 * Removes the temp files of writers that are gone. Those that look dead by the leases read so far
 * are judged again by leases read after their listing (liveRuns): only those still dead go, and
 * nothing listed later (sweepTemp lists again).
 */
async function sweepDeadTemp(sink: Sink, live: ReadonlySet<string>, now: Date, scan?: TempScan): Promise<void> {
  const deadBy = (runs: ReadonlySet<string>) => (t: TempEntry) =>
    t.owner ? !runs.has(t.owner) : (t.startedAt?.getTime() ?? 0) <= now.getTime() - DAY_MS;
  const suspects = (await sink.listTemp('', scan)).filter(deadBy(live));
  if (suspects.length === 0) return;
  const dead = new Set(suspects.filter(deadBy(await liveRuns(sink, now))).map((t) => t.relPath));
  if (dead.size > 0) await sink.sweepTemp('', (t) => !dead.has(t.relPath), scan);
}

export interface SweepResult {
  /**
   * When the whole destination was walked though no run had committed to it: a run that then
   * commits records it (recordWalkOnceCommitted), so the second night does not walk it all again.
   */
  unrecordedWalk?: Date;
}

/** After a run: records its sweep's whole walk if the destination now has a manifest. */
export async function recordWalkOnceCommitted(sink: Sink, sweep: SweepResult): Promise<void> {
  if (sweep.unrecordedWalk && (await listDocs(sink)).length > 0) await recordFullSweep(sink, sweep.unrecordedWalk);
}

async function recordFullSweep(sink: Sink, at: Date): Promise<void> {
  await sink.writeAtomic(FULL_SWEEP_RECORD, JSON.stringify({ at: at.toISOString() }) + '\n');
}

async function fullSweepDue(sink: Sink, now: Date): Promise<boolean> {
  const text = await sink.read(FULL_SWEEP_RECORD);
  if (text === undefined) return true;
  try {
    const at = Date.parse((JSON.parse(text.toString('utf8')) as { at?: string }).at ?? '');
    return !(at > now.getTime() - FULL_SWEEP_EVERY_MS && at <= now.getTime());
  } catch {
    return true; // unreadable: walk, and write it again
  }
}

/**
 * Runs with manifest parts or a run marker, but no whole-run manifest and no live lease, not swept
 * yet; and the live runs, by leases read after those listings (liveRuns).
 */
async function killedRuns(sink: Sink, docs: ManifestDoc[], now: Date): Promise<{ killed: Map<string, string[]>; live: Set<string> }> {
  const finals = new Set<string>();
  const runs = new Map<string, string[]>();
  for (const r of byRun(docs)) {
    if (r.manifest) finals.add(r.runId);
    else
      runs.set(
        r.runId,
        r.parts.map((d) => d.path),
      );
  }
  const ended: string[] = [];
  for (const p of await sink.list(RUNS_DIR)) {
    const runId = p.slice(RUNS_DIR.length, -'.json'.length);
    if (finals.has(runId))
      ended.push(p); // its manifest was written: only the marker was left
    else if (!runs.has(runId)) runs.set(runId, []);
  }
  if (ended.length) await sink.remove(ended);
  const live = await liveRuns(sink, now);
  const swept = new Set((await sink.list(SWEPT_DIR)).map((p) => p.slice(SWEPT_DIR.length, -'.json'.length)));
  for (const runId of [...runs.keys()]) if (finals.has(runId) || live.has(runId) || swept.has(runId)) runs.delete(runId);
  return { killed: runs, live };
}

async function sweepUnlisted(sink: Sink, all: string[], runId: string, partPaths: string[]): Promise<void> {
  const listed = await listedFiles(sink, partPaths);
  if (!listed) return; // a part unreadable or gone meanwhile: never delete what it may list
  const named = new RegExp(`/${runId.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}-\\d+\\.[a-z.]+$`);
  const orphans = all.filter((p) => !p.startsWith('_') && named.test(p) && !listed.has(p));
  if (orphans.length) await sink.remove(orphans);
  await sink.writeAtomic(`${SWEPT_DIR}${runId}.json`, JSON.stringify({ run_id: runId, removed: orphans.length }) + '\n');
  await markRunEnded(sink, runId);
}
