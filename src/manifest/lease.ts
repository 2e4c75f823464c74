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
}

export async function acquireLease(sink: Sink, o: LeaseOptions): Promise<Lease> {
  const now = o.now ?? (() => new Date());
  const sleep = o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const path = leasePath(o.shard);
  const record = (): LeaseRecord => {
    const at = now().toISOString();
    return { run_id: o.runId, host: hostname(), pid: process.pid, started_at: startedAt, heartbeat_at: at };
  };
  const startedAt = now().toISOString();
  const deadline = now().getTime() + o.waitSeconds * 1000;
  let told = false;
  for (;;) {
    if (await sink.createExclusive(path, JSON.stringify(record()) + '\n')) break;
    const holder = await readLease(sink, path);
    if (!holder || isStale(holder, now(), o.alive ?? isAlive)) {
      // A run that died without releasing: take it over (remove, then create exclusively again),
      // unless another run took it over meanwhile (the record changed since we judged it).
      const again = await readLease(sink, path);
      if (again?.run_id === holder?.run_id && again?.heartbeat_at === holder?.heartbeat_at) await sink.remove([path]);
      continue;
    }
    if (now().getTime() >= deadline) throw lockedError(sink, holder, o.waitSeconds);
    if (!told) o.onWait?.(describeHolder(holder));
    told = true;
    await sleep(Math.min(5_000, Math.max(100, deadline - now().getTime())));
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
export async function readLeases(sink: Sink): Promise<LeaseRecord[]> {
  const out: LeaseRecord[] = [];
  for (const p of await sink.list(LOCKS_DIR)) {
    const l = await readLease(sink, p);
    if (l) out.push(l);
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
