import { Readable } from 'node:stream';
import { bufferUpTo, decodePage, DEFAULT_STREAM_THRESHOLD, type PageDecoder } from '../decode/index.ts';
import type { TaskEncoding } from './pool.ts';

/**
 * The page decoder a task hands its paginator when its pages are encoded by src/encode: the raw
 * body is read (still gzip) and submitted to the task's encoding; the batch yielded carries the
 * page's meta as soon as it is parsed (so the next page is requested at once) and `encoded`, the
 * promise of its encoded rows. A body that fails to decode throws the decoder's own error inside
 * the paginator's retry loop, so a truncated page is fetched again, as on the main thread.
 * Pages too large to parse whole (the streamed path's territory) take decodePage and come back
 * as rows: the pipeline flattens those here, in order with the rest. `onBody` hears each body's
 * size as received, before it is parsed.
 */
export function encodingDecoder(task: TaskEncoding, onBody?: (bytes: number) => void): PageDecoder {
  return async function* (body, opts) {
    // compressed bytes (JSON compresses ~8x): a page parsed whole in a worker, whose heap is
    // capped, stays well under the streaming threshold
    const limit = (opts.streamThresholdBytes ?? DEFAULT_STREAM_THRESHOLD) / 16;
    if (opts.contentLength !== undefined && opts.contentLength > limit) {
      onBody?.(opts.contentLength);
      yield* decodePage(body, opts);
      return;
    }
    let raw: Buffer;
    try {
      const read = await bufferUpTo(body, limit);
      if (read.rest) {
        onBody?.(limit);
        yield* decodePage(Readable.from(read.rest), { ...opts, contentLength: undefined });
        return;
      }
      raw = read.whole;
    } finally {
      if (!body.destroyed && !body.readableEnded) body.destroy(); // never leave a socket half-read
    }
    onBody?.(raw.length);
    const page = await task.submit(raw, opts.gzip === true);
    const info = await page.parsed;
    yield { rows: [], last: true, bytes: info.bytes, meta: info.meta, encoded: page.result };
  };
}
