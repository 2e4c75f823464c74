import type { Readable } from 'node:stream';
import { parseBufferedPage, decodeBuffered } from './buffered.ts';
import { decodeStreamed, decodeStreamedBytes, decompressed } from './streamed.ts';
import { classifyStreamError, DEFAULT_STREAM_THRESHOLD, type DecodedBatch, type DecodeOptions } from './types.ts';

export { parseBufferedPage, decodeBuffered, decodeStreamed, decodeStreamedBytes };
export { parseJson, gunzipBuffer, gunzipWhole, readAll } from './buffered.ts';
export * from './types.ts';
export { replaceLoneSurrogates, countsRecord, type SurrogateScope } from './well-formed.ts';
export { inheritMarks } from './page-marks.ts';
export { valuesOverLimits, LOADER_LIMITS, type OverLimit } from './loader-limits.ts';

/**
 * Decodes one list page. Small pages take the fast path (buffer, one gunzip, one JSON.parse,
 * one batch); a page whose Content-Length, or whose decompressed bytes so far, exceed
 * `streamThresholdBytes` switches to the incremental parser, starting with the bytes already read.
 */
export async function* decodePage(body: Readable | Buffer, opts: DecodeOptions = {}): AsyncGenerator<DecodedBatch> {
  const threshold = opts.streamThresholdBytes ?? DEFAULT_STREAM_THRESHOLD;
  const wireLength = Buffer.isBuffer(body) ? body.length : opts.contentLength;
  if (wireLength !== undefined && wireLength > threshold) {
    yield* decodeStreamed(body, opts);
    return;
  }
  if (Buffer.isBuffer(body) && !opts.gzip) {
    yield parseBufferedPage(body);
    return;
  }
  const source = decompressed(body, opts.gzip);
  try {
    const read = await bufferUpTo(source, threshold);
    if (read.rest) yield* decodeStreamedBytes(read.rest, opts);
    else yield parseBufferedPage(read.whole);
  } finally {
    // an abandoned or failed page must not leave its socket half-read
    if (!source.destroyed && !source.readableEnded) source.destroy();
  }
}

/**
 * Reads a body into memory while it stays within `limit` bytes: the whole of it, or (once it
 * passes the limit) the bytes already read followed by the rest of the stream, so nothing read is
 * lost when the caller switches to an incremental path. Truncated gzip is the retriable error.
 */
export async function bufferUpTo(
  source: AsyncIterable<Buffer>,
  limit: number,
): Promise<{ whole: Buffer; rest?: undefined } | { rest: AsyncGenerator<Buffer> }> {
  const it = source[Symbol.asyncIterator]();
  const chunks: Buffer[] = [];
  let total = 0;
  for (;;) {
    let r: IteratorResult<Buffer>;
    try {
      r = await it.next();
    } catch (e) {
      throw classifyStreamError(e);
    }
    if (r.done) return { whole: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total) };
    chunks.push(r.value);
    total += r.value.length;
    if (total > limit) return { rest: resume(chunks, it) };
  }
}

/** The bytes already buffered, then the rest of the stream: nothing read is lost on the switch. */
async function* resume(head: Buffer[], it: AsyncIterator<Buffer>): AsyncGenerator<Buffer> {
  for (let i = 0; i < head.length; i++) yield head[i];
  head.length = 0;
  for (;;) {
    const r = await it.next();
    if (r.done) return;
    yield r.value;
  }
}
