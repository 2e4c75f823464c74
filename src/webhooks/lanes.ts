import { createHash } from 'node:crypto';
import { isStale, leasePath, readLeases, type LeaseRecord } from '../manifest/lease.ts';
import type { Sink } from '../sink/types.ts';

/**
 * With more than one run allowed at a time (`--max-runs N`), the receiver's runs must not contend
 * for the destination's lease: each takes shard I of N (`--shard I/N`), whose lease covers only its
 * schools, and a school always goes to the same shard. N = 1 is the whole destination.
 */

/** The shard of a school: the same stable hash as pipeline/shard.ts (test/webhooks checks they agree). */
export function laneOf(schoolId: string, count: number): number {
  if (count <= 1) return 0;
  return createHash('sha1').update(schoolId).digest().readUInt32BE(0) % count;
}

/**
 * The live lease that a run of shard `lane` would wait for: the whole destination's, or that of
 * another shard layout (a nightly run sharded differently); the other shards of our own layout do
 * not overlap ours. Stale leases are not waited for (the run takes them over).
 */
export async function blockingLease(sink: Sink, lane: { index: number; count: number }, now: Date): Promise<LeaseRecord | undefined> {
  const own = leasePath(lane);
  for (const l of await readLeases(sink)) {
    const count = Number(/-s\d+of(\d+)\.json$/.exec(l.file)?.[1] ?? 1);
    if (l.file !== own && count === lane.count && count > 1) continue;
    if (!isStale(l, now)) return l;
  }
  return undefined;
}
