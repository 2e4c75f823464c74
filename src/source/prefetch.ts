import type { PageLinks } from './pagination.ts';

/** A page that has been started: its request is in flight and its first batch is on the way. */
export interface StartedPage<B> {
  gen: AsyncGenerator<B>;
  first: Promise<IteratorResult<B>>;
  abort: AbortController;
}

/** Starts a page now; the caller awaits its first batch when it needs it. */
export function startPage<B>(open: (signal: AbortSignal) => AsyncGenerator<B>): StartedPage<B> {
  const abort = new AbortController();
  const gen = open(abort.signal);
  const first = gen.next();
  first.catch(() => undefined); // awaited later; never an unhandled rejection meanwhile
  return { gen, first, abort };
}

/**
 * The reason pages are aborted with when a walk stops (also after its last page, to release its
 * connection): one instance, since abort() without a reason builds a DOMException, stack trace
 * included, every time (measured: a visible share of a nightly run of thousands of small tasks).
 */
const STOPPED = new DOMException('This operation was aborted', 'AbortError');

/**
 * Walks the pages of one pagination. As soon as a page's last batch says where the next page is,
 * that page is started, so it downloads while the consumer handles this one: one page ahead,
 * never more. Stopping early aborts whatever was started and releases its connection.
 */
export async function* walkPages<B extends { last: boolean; meta?: { pagination?: unknown } }>(
  first: URL,
  links: PageLinks,
  open: (url: URL, signal: AbortSignal) => AsyncGenerator<B>,
): AsyncGenerator<{ batch: B; page: number; final: boolean; next?: URL }> {
  let url = first;
  let current: StartedPage<B> = startPage((s) => open(url, s));
  let ahead: StartedPage<B> | undefined;
  let page = 1;
  try {
    for (;;) {
      let next: URL | undefined;
      let r = await current.first;
      while (!r.done) {
        const batch = r.value;
        if (batch.last) {
          next = links.next(batch.meta?.pagination, url);
          if (next) {
            const target = next;
            ahead = startPage((s) => open(target, s));
          }
        }
        yield { batch, page, final: batch.last && !next, ...(batch.last && next ? { next } : {}) };
        r = await current.gen.next();
      }
      if (!next || !ahead) return;
      current = ahead;
      ahead = undefined;
      url = next;
      page++;
    }
  } finally {
    for (const p of [ahead, current]) {
      if (!p) continue;
      p.abort.abort(STOPPED);
      await p.first.catch(() => undefined);
      await p.gen.return(undefined as never).catch(() => undefined);
    }
  }
}
