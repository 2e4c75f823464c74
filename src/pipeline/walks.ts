import { ApiError } from '../errors.ts';
import type { PageBatch } from '../source/client.ts';
import type { CheckpointTimer } from './checkpoints.ts';
import type { WindowDedupe } from './windows.ts';

/**
 * A cursor walk over one slice of a task (the whole task, or one updated_at window), as a
 * checkpoint saves it: its bounds, the next page to read, and whether it has ended.
 */
export interface Walk {
  after?: string;
  before?: string;
  next?: string;
  done?: boolean;
}

/** The service refused a saved cursor (400 on a resumed walk's first page): the read starts over. */
export class CursorRefused extends Error {
  constructor(override readonly cause: ApiError) {
    super(cause.message);
  }
}

export interface WalkRunner {
  /** Pages of one walk (from its saved next page when it has one). */
  pages(walk: Walk): AsyncGenerator<PageBatch>;
  /**
   * Hands a page's records to the task's files (called one at a time, in arrival order); a page
   * encoded by src/encode comes as `encoded` (PageBatch.encoded) with no records.
   */
  write(records: readonly unknown[], encoded?: unknown): Promise<void>;
  /** After each page: counts and progress. */
  pageDone(batch: PageBatch): void;
  /** Commits what the walks have written and saves where each stands. */
  checkpoint(walks: Walk[]): Promise<void>;
  timer: CheckpointTimer;
  pagesRead(): number;
  dedupe?: WindowDedupe;
  signal?: AbortSignal;
}

/**
 * Runs the walks side by side: writes go through one queue, so files see one page at a time; a
 * due checkpoint parks every walk at its next page boundary, commits, saves each walk's cursor,
 * then lets them go on. Returns the server's clock at the first answer.
 */
export async function runWalks(walks: Walk[], r: WalkRunner): Promise<Date | undefined> {
  let serverStart: Date | undefined;
  let queue: Promise<void> = Promise.resolve();
  const write = (records: readonly unknown[], encoded?: unknown): Promise<void> => {
    const p = queue.then(() => r.write(records, encoded));
    queue = p.catch(() => undefined);
    return p;
  };
  const barrier = new Barrier(walks.filter((w) => !w.done).length, async () => {
    await queue;
    await r.checkpoint(walks);
    r.timer.reset(r.pagesRead());
  });
  let failed = false; // one walk's failure ends its siblings at their next page
  const one = async (walk: Walk): Promise<void> => {
    if (walk.done) return;
    let firstPage = walk.next !== undefined; // a resumed walk whose saved cursor is not yet accepted
    try {
      for await (const batch of r.pages(walk)) {
        firstPage = false;
        r.signal?.throwIfAborted();
        if (failed) return;
        serverStart ??= batch.serverDate;
        await write(r.dedupe ? r.dedupe.admit(batch.rows) : batch.rows, batch.encoded);
        if (!batch.last) continue;
        walk.next = batch.next;
        walk.done = batch.next === undefined;
        r.pageDone(batch);
        if (!walk.done && r.timer.due(r.pagesRead())) await barrier.park();
      }
      walk.done = true;
    } catch (e) {
      failed = true;
      barrier.fail(e);
      throw firstPage && e instanceof ApiError && e.status === 400 ? new CursorRefused(e) : e;
    } finally {
      barrier.leave();
    }
  };
  const results = await Promise.allSettled(walks.map(one));
  const rejected = results.find((x): x is PromiseRejectedResult => x.status === 'rejected');
  if (rejected) throw rejected.reason;
  await queue;
  return serverStart;
}

/** Waits until every walk still running has parked, runs the checkpoint once, releases them. */
class Barrier {
  private parked = 0;
  private round: { promise: Promise<void>; resolve: () => void; reject: (e: unknown) => void } | undefined;

  constructor(
    private active: number,
    private readonly commit: () => Promise<void>,
  ) {}

  private failure: { e: unknown } | undefined;

  /** A walk failed: nothing more is committed; walks parked or parking are released with its error. */
  fail(e: unknown): void {
    this.failure ??= { e };
    this.round?.reject(e);
    this.round = undefined;
  }

  park(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure.e);
    this.round ??= deferred();
    this.parked += 1;
    const wait = this.round.promise;
    this.settle();
    return wait;
  }

  leave(): void {
    this.active -= 1;
    this.settle();
  }

  private settle(): void {
    const round = this.round;
    if (this.failure || !round || this.parked === 0 || this.parked < this.active) return;
    this.round = undefined;
    this.parked = 0;
    this.commit().then(round.resolve, round.reject);
  }
}

function deferred(): { promise: Promise<void>; resolve: () => void; reject: (e: unknown) => void } {
  let resolve!: () => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => undefined); // a walk that failed meanwhile is not waiting on it
  return { promise, resolve, reject };
}
