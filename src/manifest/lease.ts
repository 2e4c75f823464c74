import { hostname } from 'node:os';
import { ExportError } from '../errors.ts';
import type { Sink } from '../sink/types.ts';

/**
 * One run per destination (per shard): a lease file created exclusively (local: O_EXCL; S3: a
 * conditional PUT with If-None-Match: *), refreshed by a heartbeat, removed at the end. A lease
 * whose heartbeat is older than STALE_AFTER_MS, or whose process is gone from this host, is
 * stale: the run that finds it takes it over. `school-export status` shows the holder.
 */
export interface LeaseRecord {
  run_id: string;
  host: string;
  pid: number;
  started_at: string;
  heartbeat_at: string;
}

export const LOCKS_DIR = '_state/_locks/';
export const HEARTBEAT_MS = 60_000;
export const STALE_AFTER_MS = 5 * 60_000;

const LEASE_FILE = /^_state\/_locks\/run(-s\d+of\d+)?\.json$/;

export function leasePath(shard: { index: number; count: number }): string {
  return `${LOCKS_DIR}run${shard.count > 1 ? `-s${shard.index}of${shard.count}` : ''}.json`;
}

export interface Lease {
  readonly path: string;
  release(): Promise<void>;
}

export interface LeaseOptions {
  runId: string;
  shard: { index: number; count: number };
  /** Wait up to this long for a live holder to finish (0: fail at once). */
  waitSeconds: number;
  now?: () => Date;
  sleep?: (ms: number) => Promise<void>;
  onWait?: (holder: string) => void;
  /** Whether a process of this host is alive (injected by tests). */
  alive?: (pid: number) => boolean;
  /** Stops a wait at once (SIGINT/SIGTERM): the run then ends as interrupted. */
  signal?: AbortSignal;
}

export async function acquireLease(sink: Sink, o: LeaseOptions): Promise<Lease> {
  const now = o.now ?? (() => new Date());
  const sleep = o.sleep ?? ((ms: number) => abortableSleep(ms, o.signal));
  const alive = o.alive ?? isAlive;
  const path = leasePath(o.shard);
  const startedAt = now().toISOString();
  const record = (): LeaseRecord => ({
    run_id: o.runId,
    host: hostname(),
    pid: process.pid,
    started_at: startedAt,
    heartbeat_at: now().toISOString(),
  });
  const deadline = now().getTime() + o.waitSeconds * 1000;
  let told = false;
  for (;;) {
    o.signal?.throwIfAborted();
    let holder: LeaseRecord | undefined;
    if (await sink.createExclusive(path, JSON.stringify(record()) + '\n')) {
      holder = await overlappingHolder(sink, o, now(), alive);
      if (!holder) break;
      await sink.remove([path]); // a run of another shard layout was first: let it be
    } else {
      holder = await readLease(sink, path);
      if (!holder || isStale(holder, now(), alive)) {
        await takeOver(sink, path, holder, o.runId, now());
        continue;
      }
    }
    if (now().getTime() >= deadline) throw lockedError(sink, holder, o.waitSeconds);
    if (!told) o.onWait?.(describeHolder(holder));
    told = true;
    try {
      await sleep(Math.min(5_000, Math.max(100, deadline - now().getTime())));
    } catch {
      throw new ExportError('E_ABORTED', `interrupted while waiting for ${describeHolder(holder)}`);
    }
  }
  const beat = setInterval(() => {
    void sink.writeAtomic(path, JSON.stringify(record()) + '\n').catch(() => undefined);
  }, HEARTBEAT_MS);
  beat.unref();
  return {
    path,
    async release() {
      clearInterval(beat);
      const current = await readLease(sink, path).catch(() => undefined);
      if (current?.run_id === o.runId) await sink.remove([path]);
    },
  };
}

/**
 * Removes a stale lease so a run can create its own, once: the first run to create the takeover
 * marker for that stale record does it (exclusive create, like the lease), so two runs that both
 * judged it stale cannot both end up holding the destination. A marker left by a taker that died
 * is cleared after a minute.
 */
async function takeOver(sink: Sink, path: string, stale: LeaseRecord | undefined, runId: string, now: Date): Promise<void> {
  const marker = `${path}.takeover-${(stale?.heartbeat_at ?? 'torn').replace(/[^0-9A-Za-z]/g, '')}`;
  if (await sink.createExclusive(marker, JSON.stringify({ run_id: runId, at: now.toISOString() }) + '\n')) {
    try {
      const again = await readLease(sink, path);
      if (again?.run_id === stale?.run_id && again?.heartbeat_at === stale?.heartbeat_at) await sink.remove([path]);
    } finally {
      await sink.remove([marker]);
    }
    return;
  }
  const other = JSON.parse((await sink.read(marker))?.toString('utf8') || '{}') as { at?: string };
  if (!other.at || now.getTime() - Date.parse(other.at) > 60_000) await sink.remove([marker]);
}

/**
 * Leases of other shard layouts cover the same schools (the whole destination and shard 0/2, or
 * 0/2 and 0/3): a live one held by a run that started first wins, so the two never both run.
 */
async function overlappingHolder(
  sink: Sink,
  o: { runId: string; shard: { index: number; count: number } },
  now: Date,
  alive: (pid: number) => boolean,
): Promise<LeaseRecord | undefined> {
  for (const p of await sink.list(LOCKS_DIR)) {
    if (p === leasePath(o.shard) || !LEASE_FILE.test(p)) continue;
    const other = await readLease(sink, p);
    const count = Number(/-s\d+of(\d+)\.json$/.exec(p)?.[1] ?? 1);
    if (!other || isStale(other, now, alive) || (count === o.shard.count && count > 1)) continue;
    if (other.run_id < o.runId) return other; // run ids sort by start time: the earlier run keeps it
  }
  return undefined;
}

function abortableSleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export async function readLease(sink: Sink, path: string): Promise<LeaseRecord | undefined> {
  const buf = await sink.read(path);
  if (!buf) return undefined;
  try {
    return JSON.parse(buf.toString('utf8')) as LeaseRecord;
  } catch {
    return undefined; // a torn or foreign file holds nothing: it is replaced
  }
}

/** Every lease at the destination (all shards), for `status` and for sweeping dead runs' leftovers. */
export async function readLeases(sink: Sink): Promise<(LeaseRecord & { file: string })[]> {
  const out: (LeaseRecord & { file: string })[] = [];
  for (const p of await sink.list(LOCKS_DIR)) {
    if (!LEASE_FILE.test(p)) continue; // takeover markers are not leases
    const l = await readLease(sink, p);
    if (l) out.push({ ...l, file: p });
  }
  return out;
}

export function isStale(l: LeaseRecord, now: Date, alive: (pid: number) => boolean = isAlive): boolean {
  const beat = Date.parse(l.heartbeat_at);
  if (!Number.isFinite(beat) || now.getTime() - beat > STALE_AFTER_MS) return true;
  return l.host === hostname() && !alive(l.pid);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function describeHolder(l: LeaseRecord): string {
  return `run ${l.run_id} on ${l.host} (pid ${l.pid}), started ${l.started_at}, last heartbeat ${l.heartbeat_at}`;
}

function lockedError(sink: Sink, l: LeaseRecord, waited: number): ExportError {
  const wait = waited > 0 ? `still held after waiting ${waited} s` : 'pass --wait-for-lock SECONDS to wait for it';
  return new ExportError('E_LOCKED', `${sink.url} is being exported by ${describeHolder(l)}: ${wait}`);
}
