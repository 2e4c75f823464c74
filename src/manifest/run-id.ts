import { randomBytes } from 'node:crypto';

/**
 * Sortable by start time to the millisecond (loaders apply runs in run_id order, and tests run
 * several exports a second), unique across concurrent shards: 20261122T011558.123Z-3f9a[-s2of8].
 */
export function newRunId(now = new Date(), shard?: { index: number; count: number }, suffix?: string): string {
  const stamp = now.toISOString().replace(/[-:]/g, '');
  const rand = randomBytes(2).toString('hex');
  const shardPart = shard && shard.count > 1 ? `-s${shard.index}of${shard.count}` : '';
  return `${stamp}-${suffix ? suffix + '-' : ''}${rand}${shardPart}`;
}

export const RUN_ID_RE = /^\d{8}T\d{6}\.\d{3}Z-[a-z0-9-]+$/;
