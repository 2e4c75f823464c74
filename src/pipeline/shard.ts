import { createHash } from 'node:crypto';

/**
 * Stable assignment of a school to one of N shards: the same school always lands on the same
 * shard whatever the order or number of schools, so each shard owns its schools' state files.
 */
export function shardOf(schoolId: string, count: number): number {
  if (count <= 1) return 0;
  const h = createHash('sha1').update(schoolId).digest();
  return h.readUInt32BE(0) % count;
}
