import { hostname } from 'node:os';
import { ExportError, oneLine } from '../errors.ts';
import { Housekeeping } from '../sink/housekeeping.ts';
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
  /** Set when the run ended but the store refused to delete its lease: the lease holds nothing. */
  released_at?: string;
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
  /**
   * lease (default): the lease is created with a conditional write, on a store checked to honour
   * it (checkConditionalCreate). none: the scheduler guarantees one run at a time; the run still
   * writes its lease record (status shows it, sweeps spare its files) and refuses to start while
   * another run's live lease is visible, but cannot stop two runs that start at the same moment.
   */
  lock?: 'lease' | 'none';
  /** Where removals the store refuses (old leases, takeover markers) are reported instead of failing. */
  housekeeping?: Housekeeping;
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
  const advisory = o.lock === 'none';
  // Stores are checked (S3 and its imitations); a local directory's exclusive create is link(2), EEXIST by POSIX.
  if (!advisory && sink.store !== undefined) await checkConditionalCreate(sink, { runId: o.runId, now: now() });
  const create = advisory
    ? (data: string) => createAdvisory(sink, path, data, o.runId, now(), alive)
    : (data: string) => sink.createExclusive(path, data);
  let told = false;
  let torn = 0;
  for (;;) {
    o.signal?.throwIfAborted();
    let holder: LeaseRecord | undefined;
    if (await create(JSON.stringify(record()) + '\n')) {
      // Read back what this run depends on: the lease it holds is its own, whole.
      const mine = await readLease(sink, path);
      if (mine?.run_id !== o.runId) {
        if (!mine && ++torn > 3)
          throw new ExportError('E_LOCKED', `${sink.url}: the lease ${path} is being written by another run at the same time`);
        if (!mine) continue;
        holder = mine; // another run wrote over it: it holds the destination
      } else {
        holder = await overlappingHolder(sink, o, now(), alive);
        if (!holder) break;
        await sink.remove([path]); // a run of another shard layout was first: let it be
      }
    } else {
      holder = await readLease(sink, path);
      if (!holder || isStale(holder, now(), alive)) {
        if (await takeOver(sink, path, holder, { runId: o.runId, now: now(), record: record(), housekeeping: o.housekeeping })) break;
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
      if (current?.run_id !== o.runId) return;
      try {
        await sink.remove([path]);
      } catch (e) {
        if (!Housekeeping.refused(e)) throw e;
        // No permission to delete: mark it released, so the next run does not wait for it to go stale.
        await sink.writeAtomic(path, JSON.stringify({ ...current, released_at: new Date().toISOString() }) + '\n');
      }
    },
  };
}

/**
 * --lock none: write the lease record unless another run's live lease is visible. Without a
 * conditional write two runs starting at the same moment can both pass: the scheduler is what
 * keeps them apart (docs/s3.md, "One run at a time").
 */
async function createAdvisory(
  sink: Sink,
  path: string,
  data: string,
  runId: string,
  now: Date,
  alive: (pid: number) => boolean,
): Promise<boolean> {
  const current = await readLease(sink, path);
  if (current && current.run_id !== runId && !isStale(current, now, alive)) return false;
  await sink.writeAtomic(path, data);
  return true;
}

/** Where the result of the conditional-write check is remembered (per destination). */
export const STORE_CHECK_FILE = '_state/_store.json';

export interface StoreCheck {
  /** The store checked (sink.store: the S3 endpoint, or AWS S3; else the destination URL). */
  store: string;
  /** enforced: a second If-None-Match: * PUT of the same key was refused; ignored: it succeeded; unsupported: the store refused the header. */
  conditional_create: 'enforced' | 'ignored' | 'unsupported';
  checked_at: string;
  run_id: string;
}

/**
 * The lease is only as good as the store's conditional write. Before the first run on a
 * destination, and again when its store (endpoint) changes, create a probe object twice with
 * If-None-Match: * and see the second refused; the result is remembered in the destination. A
 * store that accepts both (s3rver, older S3-compatible stores and gateways) would let two runs
 * both take the lease: the run refuses with exit 2 (E_LOCK_UNSAFE) and says what to do. A store
 * found wanting is checked again by every run, so an upgraded store is noticed.
 */
export async function checkConditionalCreate(sink: Sink, o: { runId: string; now: Date }): Promise<StoreCheck> {
  const store = sink.store ?? sink.url;
  const known = await readStoreCheck(sink);
  if (known?.store === store && known.conditional_create === 'enforced') return known;
  const probe = `${LOCKS_DIR}probe-${o.runId.replace(/[^0-9A-Za-z._-]/g, '_')}.json`;
  const body = JSON.stringify({ run_id: o.runId, at: o.now.toISOString() }) + '\n';
  let result: StoreCheck['conditional_create'];
  let detail = '';
  try {
    const first = await sink.createExclusive(probe, body);
    const second = await sink.createExclusive(probe, body);
    result = first && second ? 'ignored' : 'enforced';
  } catch (e) {
    if (!Housekeeping.refused(e) && !/If-None-Match|precondition|not implemented|NotImplemented/i.test(oneLine(e))) throw e;
    result = 'unsupported';
    detail = ` (${oneLine(e)})`;
  } finally {
    await sink.remove([probe]).catch(() => undefined);
  }
  const check: StoreCheck = { store, conditional_create: result, checked_at: o.now.toISOString(), run_id: o.runId };
  await sink.writeAtomic(STORE_CHECK_FILE, JSON.stringify(check, null, 2) + '\n');
  if (result === 'enforced') return check;
  const what =
    result === 'ignored'
      ? 'ignores conditional writes (a second PUT with If-None-Match: * of the same key succeeded)'
      : `refuses conditional writes (PUT with If-None-Match: *)${detail}`;
  throw new ExportError(
    'E_LOCK_UNSAFE',
    `${sink.url}: ${store} ${what}, so the lease cannot keep two runs apart; use a store that honours If-None-Match (AWS S3, current MinIO), or run with --lock none and let the scheduler run one export at a time (a Kubernetes CronJob with concurrencyPolicy: Forbid, or one crontab line; docs/s3.md)`,
  );
}

export async function readStoreCheck(sink: Sink): Promise<StoreCheck | undefined> {
  const buf = await sink.read(STORE_CHECK_FILE);
  if (!buf) return undefined;
  try {
    return JSON.parse(buf.toString('utf8')) as StoreCheck;
  } catch {
    return undefined; // unreadable: checked again
  }
}

/**
 * Removes a stale lease so a run can create its own, once: the first run to create the takeover
 * marker for that stale record does it (exclusive create, like the lease), so two runs that both
 * judged it stale cannot both end up holding the destination. A marker left by a taker that died
 * is cleared after a minute.
 */
async function takeOver(
  sink: Sink,
  path: string,
  stale: LeaseRecord | undefined,
  o: { runId: string; now: Date; record: LeaseRecord; housekeeping?: Housekeeping },
): Promise<boolean> {
  const { runId, now } = o;
  const marker = `${path}.takeover-${(stale?.released_at ?? stale?.heartbeat_at ?? 'torn').replace(/[^0-9A-Za-z]/g, '')}`;
  const removeMarker = () =>
    sink.remove([marker]).catch((e: unknown) => {
      if (!Housekeeping.refused(e)) throw e;
      o.housekeeping?.failed('removing lease takeover markers', e);
    });
  if (await sink.createExclusive(marker, JSON.stringify({ run_id: runId, at: now.toISOString() }) + '\n')) {
    try {
      const again = await readLease(sink, path);
      if (again?.run_id !== stale?.run_id || again?.heartbeat_at !== stale?.heartbeat_at) return false;
      try {
        await sink.remove([path]);
      } catch (e) {
        if (!Housekeeping.refused(e)) throw e;
        // The store will not delete it: replace the stale lease with ours while holding the marker.
        o.housekeeping?.failed('removing old leases', e);
        await sink.writeAtomic(path, JSON.stringify(o.record) + '\n');
        return (await readLease(sink, path))?.run_id === runId;
      }
    } finally {
      await removeMarker();
    }
    return false;
  }
  const other = JSON.parse((await sink.read(marker))?.toString('utf8') || '{}') as { at?: string };
  if (!other.at || now.getTime() - Date.parse(other.at) > 60_000) await removeMarker();
  return false;
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
  if (l.released_at) return true;
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
