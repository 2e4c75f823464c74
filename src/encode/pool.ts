/**
 * Where pages' CPU work runs: this thread, or worker threads once this thread is the bottleneck,
 * behind one interface so the pipeline does not care.
 *  - A pool never makes a run slower: pages are encoded on this thread (no thread start, no copy,
 *    no second JIT warm-up) until this thread is the bottleneck and pages are what keeps it busy
 *    (busyMeter: over a window of BUSY_WINDOW_MS, its event-loop utilisation and twice the share
 *    of the window spent on page work both reach `busyShare`); only then do threads start, at
 *    most `workers` of them, and take every later page. A run bound by the API's latency, a
 *    night of small tasks, or the busy start of a small run starts none. `--workers 0` never does.
 *  - Pages go to a worker as transferable buffers and come back as encoded bytes, never as row
 *    objects; each task is pinned to one worker once it has one (its drift and memo live there),
 *    so a task's pages are encoded, and answered, in order. Pages of a task encoded here before
 *    carry their drift with them, so a task may mix both.
 *  - Pages in flight are bounded (submit() waits for a slot), so memory stays flat whatever the
 *    number of tasks; worker heaps are capped explicitly.
 *  - A page's meta (the next cursor) is answered right after JSON.parse, before its rows are
 *    encoded, so the cursor walk keeps moving.
 *  - A body that fails to decode rejects with the decoder's own error (src/decode): a truncated
 *    one is retriable, exactly as on the main thread, so the page is fetched again.
 */
import { availableParallelism } from 'node:os';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { PageMeta } from '../decode/index.ts';
import { ExportError } from '../errors.ts';
import type { PageEncoder } from './page-encoder.ts';
import { encodeParsed, encoderFor, fromWire, parsePage, type PageResult } from './page-work.ts';
import type { FromWorker, TaskSetup, ToWorker } from './protocol.ts';

export interface ParsedInfo {
  meta: PageMeta | undefined;
  rows: number;
  /** decompressed bytes */
  bytes: number;
}

export interface PageHandle {
  /** the page's meta and row count, as soon as it is parsed */
  parsed: Promise<ParsedInfo>;
  /** its rows, encoded for the task's format */
  result: Promise<PageResult>;
}

export interface TaskEncoding {
  /** Hands over a raw page body (its buffer is transferred: do not use it afterwards); waits for a slot first. */
  submit(body: Buffer, gzip: boolean): Promise<PageHandle>;
  /**
   * Encodes rows already parsed on this thread (a windowed read's, whose duplicate ids at the
   * windows' bounds are dropped before encoding), with the same generated code. With a pool
   * this thread keeps its own encoder for the task; each page carries the drift it first saw,
   * so a task may mix both.
   */
  encodeRows(rows: readonly unknown[]): PageResult;
  /** Ends the task; returns its drift (undeclared columns per table). */
  close(): Promise<Map<string, Set<string>>>;
}

export interface Encoding {
  readonly workers: number;
  /** Worker threads started so far (a pool starts them as tasks reach their second page). */
  readonly started: number;
  openTask(setup: TaskSetup): TaskEncoding;
  close(): Promise<void>;
}

export interface EncodingOptions {
  /** worker threads; 0 encodes on the calling thread */
  workers: number;
  /** pages submitted and not yet encoded, across all tasks (default 2 per worker) */
  maxPagesInFlight?: number;
  /** old-generation heap cap per worker, MB (default 64) */
  workerHeapMb?: number;
  /** young-generation size per worker, MB (default 8) */
  workerYoungMb?: number;
  /** this thread's busy share (0..1) at which threads start (default DEFAULT_BUSY_SHARE) */
  busyShare?: number;
  /**
   * How much this thread is the bottleneck over the last completed window (0..1), given the page
   * work done here so far (ms), or undefined while the window runs (default: busyMeter()). Tests
   * inject one.
   */
  busy?: (pageWorkMs: number) => number | undefined;
  /**
   * A task none of whose pages so far reached this many bytes (as received) stays on this thread
   * even when threads take pages (default SMALL_PAGE_BYTES); 0 sends every page to them.
   */
  smallPageBytes?: number;
}

/** Threads start when this thread was busy at least this share of the last window. */
export const DEFAULT_BUSY_SHARE = 0.75;
export const BUSY_WINDOW_MS = 200;
/**
 * Below this, a page costs less to encode here than to hand over: a task bound to a worker costs
 * three messages (open, page, close), and on a nightly incremental run of 1,000 schools, nearly
 * all of whose pages are empty, the pool's messages took 1.3 s of this thread's CPU and the
 * worker 2 s more, for pages whose encoding here takes microseconds.
 */
export const SMALL_PAGE_BYTES = 4096;

/**
 * The most worker threads by default: one per CPU beside this thread's, at least one; none when
 * that is fewer than the format needs to gain anything (`workersToGain`: on a 2-core machine one
 * worker made NDJSON and CSV slower than `--workers 0`, so their default there is 0). This thread
 * keeps HTTP, files and checksums busy; on a 2-core machine a second worker competed with it for
 * the cores (measured in bench/: `--workers 1` against 2).
 */
export function defaultWorkers(workersToGain = 1, cpus = availableParallelism()): number {
  const beside = Math.max(1, cpus - 1);
  return beside >= workersToGain ? beside : 0;
}

/**
 * Over windows of `windowMs`: this thread's event-loop utilisation, capped by twice the share of
 * the window it spent on page work (so a thread busy loading code or planning a run does not
 * count, and one busy half of the time with pages does); undefined until a window is complete.
 */
export function busyMeter(windowMs = BUSY_WINDOW_MS): (pageWorkMs: number) => number | undefined {
  let mark = performance.eventLoopUtilization();
  let at = performance.now();
  let workAt = 0;
  let last: number | undefined;
  return (pageWorkMs) => {
    const now = performance.now();
    if (now - at >= windowMs) {
      const next = performance.eventLoopUtilization();
      const elu = performance.eventLoopUtilization(next, mark).utilization;
      last = Math.min(elu, (2 * (pageWorkMs - workAt)) / (now - at));
      mark = next;
      at = now;
      workAt = pageWorkMs;
    }
    return last;
  };
}

export function createEncoding(o: EncodingOptions): Encoding {
  return o.workers > 0 ? new WorkerPool(o) : new InThread();
}

const observed = <T>(p: Promise<T>): Promise<T> => {
  p.catch(() => undefined); // awaited by the caller when it needs it; never unhandled meanwhile
  return p;
};

function mergeDrift(a: Map<string, Set<string>>, b: Map<string, Set<string>>): Map<string, Set<string>> {
  for (const [table, names] of b) a.set(table, new Set([...(a.get(table) ?? []), ...names]));
  return a;
}

/** What an empty page encodes to: no encoder is made for it (most pages of a nightly incremental run are empty). */
function emptyResult(setup: TaskSetup): PageResult {
  return { tables: [], records: 0, ...(setup.keyField !== undefined ? { keys: [] } : {}) };
}

/** One page's work on the calling thread; failures reject the handle's promises, as a worker's do. */
function encodeHere(encoder: () => PageEncoder, setup: TaskSetup, body: Buffer, gzip: boolean): PageHandle {
  let parsed: ReturnType<typeof parsePage>;
  try {
    parsed = parsePage(body, gzip);
  } catch (e) {
    const failed = observed(Promise.reject(e as Error));
    return { parsed: failed, result: failed as Promise<never> };
  }
  const info = { meta: parsed.meta, rows: parsed.rows.length, bytes: parsed.bytes };
  let result: Promise<PageResult>;
  try {
    result = Promise.resolve(parsed.rows.length === 0 ? emptyResult(setup) : encodeParsed(encoder(), parsed, setup.keyField));
  } catch (e) {
    result = observed(Promise.reject(e as Error));
  }
  return { parsed: Promise.resolve(info), result };
}

/** `--workers 0`: the same work, on the calling thread. */
class InThread implements Encoding {
  readonly workers = 0;
  readonly started = 0;

  openTask(setup: TaskSetup): TaskEncoding {
    let made: PageEncoder | undefined;
    const encoder = () => (made ??= encoderFor(setup));
    return {
      encodeRows: (rows) => encoder().encode(rows, setup.keyField),
      submit: (body, gzip) => Promise.resolve(encodeHere(encoder, setup, body, gzip)),
      close: () => Promise.resolve(made?.drift() ?? new Map<string, Set<string>>()),
    };
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

interface Pending {
  parsed: Deferred<ParsedInfo>;
  result: Deferred<PageResult>;
}

class Deferred<T> {
  resolve!: (v: T) => void;
  reject!: (e: Error) => void;
  readonly promise = observed(
    new Promise<T>((res, rej) => {
      this.resolve = res;
      this.reject = rej;
    }),
  );
}

/** Starts a worker running encode/worker: the compiled .js, or the .ts sources through tsx's loader. */
function startWorker(heapMb: number, youngMb: number): Worker {
  // A small young generation: a page's parsed records live only until they are encoded, and a
  // large young generation was what made worker RSS grow (measured: 16 MB -> 8 MB young saved
  // 10-20 MB RSS per export at no cost in time).
  const resourceLimits = { maxOldGenerationSizeMb: heapMb, maxYoungGenerationSizeMb: youngMb };
  const here = import.meta.url;
  if (!here.endsWith('.ts')) return new Worker(new URL('./worker.js', here), { resourceLimits });
  // tsx's ESM entry (its package exports map gives require() the .cjs twin, beside it)
  const tsx = pathToFileURL(
    createRequire(here)
      .resolve('tsx/esm/api')
      .replace(/\.cjs$/, '.mjs'),
  ).href;
  const target = new URL('./worker.ts', here).href;
  const boot = `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(target)}); });`;
  return new Worker(boot, { eval: true, resourceLimits });
}

class PoolWorker {
  readonly worker: Worker;
  tasks = 0;
  readonly pages = new Map<number, Pending>();
  readonly closing = new Map<number, Deferred<Map<string, Set<string>>>>();
  failure: Error | undefined;

  constructor(heapMb: number, youngMb: number, onSettled: () => void) {
    this.worker = startWorker(heapMb, youngMb);
    this.worker.on('message', (m: FromWorker) => {
      if (m.t === 'closed') {
        const d = this.closing.get(m.task);
        this.closing.delete(m.task);
        d?.resolve(new Map(m.drift.map(([t, names]) => [t, new Set(names)])));
        return;
      }
      const p = this.pages.get(m.page);
      if (!p) return;
      if (m.t === 'meta') p.parsed.resolve({ meta: m.meta, rows: m.rows, bytes: m.bytes });
      else {
        this.pages.delete(m.page);
        if (m.t === 'done') p.result.resolve(m.result);
        else {
          const e = fromWire(m.error);
          p.parsed.reject(e); // no effect when the meta was already answered
          p.result.reject(e);
        }
        onSettled();
      }
    });
    const fail = (e: Error) => {
      this.failure ??= e;
      for (const p of this.pages.values()) {
        p.parsed.reject(e);
        p.result.reject(e);
        onSettled();
      }
      this.pages.clear();
      for (const d of this.closing.values()) d.reject(e);
      this.closing.clear();
    };
    this.worker.on('error', (e) => fail(new ExportError('E_INTERNAL', `encoding worker failed: ${e.message}`)));
    this.worker.on('exit', (code) => fail(new ExportError('E_INTERNAL', `encoding worker exited (code ${code})`)));
  }

  post(m: ToWorker, transfer: ArrayBuffer[] = []): void {
    this.worker.postMessage(m, transfer);
  }
}

class WorkerPool implements Encoding {
  readonly workers: number;
  private pool: PoolWorker[] = [];
  private readonly max: number;
  private readonly heapMb: number;
  private readonly youngMb: number;
  private readonly busyShare: number;
  private readonly smallPageBytes: number;
  private readonly busy: (pageWorkMs: number) => number | undefined;
  /** time spent on page work on this thread so far (ms) */
  private workHere = 0;
  /** set once this thread was found to be the bottleneck: from then on pages go to threads */
  private offloading = false;
  private readonly settled: () => void;
  private inFlight = 0;
  private readonly waiting: (() => void)[] = [];
  private nextTask = 1;
  private nextPage = 1;

  constructor(o: EncodingOptions) {
    this.workers = o.workers;
    this.max = Math.max(1, o.maxPagesInFlight ?? 2 * o.workers);
    this.heapMb = o.workerHeapMb ?? 64;
    this.youngMb = o.workerYoungMb ?? 8;
    this.busyShare = o.busyShare ?? DEFAULT_BUSY_SHARE;
    this.smallPageBytes = o.smallPageBytes ?? SMALL_PAGE_BYTES;
    this.busy = o.busy ?? busyMeter();
    this.settled = () => {
      this.inFlight--;
      this.waiting.shift()?.();
    };
  }

  private threads = 0;

  get started(): number {
    return this.threads;
  }

  private async slot(): Promise<void> {
    if (this.inFlight < this.max) {
      this.inFlight++;
      return;
    }
    await new Promise<void>((res) => this.waiting.push(res));
    this.inFlight++;
  }

  /** Pins a task to the least busy worker for the rest of its life (its drift and memo live there). */
  private bind(task: number, setup: TaskSetup): PoolWorker {
    // a worker that failed takes no more tasks (theirs have failed with it): a new one replaces it
    this.pool = this.pool.filter((x) => !x.failure);
    // a thread starts when a task finds none idle: a run of one school's table starts one
    if (this.pool.length < this.workers && !this.pool.some((x) => x.tasks === 0)) {
      this.pool.push(new PoolWorker(this.heapMb, this.youngMb, this.settled));
      this.threads++;
    }
    const w = this.pool.reduce((a, b) => (b.tasks < a.tasks || (b.tasks === a.tasks && b.pages.size < a.pages.size) ? b : a));
    w.tasks++;
    w.post({ t: 'open', task, setup });
    return w;
  }

  /** Whether pages should go to threads now: once this thread was busy `busyShare` of a window, for good. */
  private offload(): boolean {
    if (!this.offloading) {
      const share = this.busy(this.workHere);
      if (share !== undefined && share >= this.busyShare) this.offloading = true;
    }
    return this.offloading;
  }

  /**
   * A task's pages are encoded on this thread while this thread has time to spare, and go to a
   * worker from the first page submitted once it has not: a run waiting on the API starts no
   * thread at all. Small pages stay here until the task's first large one (then the task moves
   * to a worker for good), so a run of small tasks (a nightly incremental run, mostly) sends
   * nothing to threads however busy this one is.
   */
  openTask(setup: TaskSetup): TaskEncoding {
    const task = this.nextTask++;
    let w: PoolWorker | undefined;
    let closed = false;
    let here: PageEncoder | undefined;
    const local = () => (here ??= encoderFor(setup));
    return {
      encodeRows: (rows) => local().encode(rows, setup.keyField),
      submit: async (body, gzip) => {
        if (closed) throw new Error('submit after close');
        if (w === undefined && (body.length < this.smallPageBytes || !this.offload())) {
          const t0 = performance.now();
          const handle = encodeHere(local, setup, body, gzip);
          this.workHere += performance.now() - t0;
          return handle;
        }
        w ??= this.bind(task, setup);
        await this.slot();
        if (w.failure) {
          this.settled();
          throw w.failure;
        }
        const page = this.nextPage++;
        const pending: Pending = { parsed: new Deferred(), result: new Deferred() };
        w.pages.set(page, pending);
        // the body's own ArrayBuffer moves to the worker when it is not shared (Node's pool): no copy
        const own = body.byteOffset === 0 && body.byteLength === body.buffer.byteLength ? body : new Uint8Array(body);
        const view = new Uint8Array(own.buffer, own.byteOffset, own.byteLength);
        w.post({ t: 'page', task, page, body: view, gzip }, [view.buffer as ArrayBuffer]);
        return { parsed: pending.parsed.promise, result: pending.result.promise };
      },
      close: () => {
        closed = true;
        const mine = here?.drift() ?? new Map<string, Set<string>>();
        if (!w) return Promise.resolve(mine);
        w.tasks--;
        if (w.failure) return Promise.reject(w.failure);
        const d = new Deferred<Map<string, Set<string>>>();
        w.closing.set(task, d);
        w.post({ t: 'close', task });
        return d.promise.then((theirs) => mergeDrift(mine, theirs));
      },
    };
  }

  async close(): Promise<void> {
    const all = this.pool;
    this.pool = [];
    await Promise.all(all.map((w) => w.worker.terminate()));
  }
}
