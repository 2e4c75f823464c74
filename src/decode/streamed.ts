import { StringDecoder } from 'node:string_decoder';
import { createGunzip } from 'node:zlib';
import { Readable, pipeline } from 'node:stream';
import type { parser } from 'stream-json';
import { badBody, classifyStreamError, DEFAULT_BATCH_SIZE, truncatedBody, type DecodedBatch, type DecodeOptions } from './types.ts';

type Token = parser.Token;

/** stream-json's tokenizer returns either nothing or a `many` wrapper around a token array. */
function tokensOf(result: unknown): readonly Token[] {
  return typeof result === 'object' && result !== null ? (result as { values: Token[] }).values : [];
}

/**
 * The incremental path over decompressed bytes: rows leave in batches of `batchSize`, so memory
 * stays bounded whatever the page size. The last batch carries meta and the byte count.
 */
export async function* decodeStreamedBytes(
  source: AsyncIterable<Buffer | string>,
  opts: Pick<DecodeOptions, 'batchSize'> = {},
): AsyncGenerator<DecodedBatch> {
  const batchSize = opts.batchSize ?? DEFAULT_BATCH_SIZE;
  // stream-json (16 modules) is loaded by the first page that streams, not by every start: a
  // small run never streams (bench start-up, issue 21 item 6)
  const [{ jsonParser }, { ListWalker }] = await Promise.all([import('stream-json/parser.js'), import('./list-walker.ts')]);
  const tokenize = jsonParser({ packValues: true, streamValues: false });
  const text = new StringDecoder('utf8');
  const walker = new ListWalker();
  let bytes = 0;
  let first = true;
  try {
    for await (const chunk of source) {
      bytes += chunk.length;
      const str = typeof chunk === 'string' ? chunk : text.write(chunk);
      // JSON.parse refuses a byte-order mark too; the tokenizer would silently skip it
      if (first && str.length > 0) {
        first = false;
        if (str.charCodeAt(0) === 0xfeff) throw badBody('unexpected byte-order mark');
      }
      if (str.length === 0) continue;
      walker.feed(tokensOf(tokenize(str)));
      // a batch is whatever has collected once it reaches batchSize: no per-row copying
      if (walker.rows.length >= batchSize) yield { rows: walker.take(), last: false, bytes: 0 };
    }
  } catch (e) {
    if (e instanceof Error && e.message.startsWith('Parser cannot parse input')) throw badBody(e.message, e);
    throw classifyStreamError(e);
  }
  if (!walker.complete) throw truncatedBody('ended early (incomplete JSON)');
  yield { rows: walker.take(), last: true, bytes, meta: walker.meta() };
}

const SLICE = 64 * 1024;

/** A body held in memory, fed in slices so one huge buffer does not become one huge batch. */
function* slices(buf: Buffer): Generator<Buffer> {
  for (let i = 0; i < buf.length; i += SLICE) yield buf.subarray(i, i + SLICE);
}

/** Decompresses a raw body as it arrives, when it is gzip. */
export function decompressed(body: Readable | Buffer, gzip: boolean | undefined): Readable {
  if (!gzip) return Buffer.isBuffer(body) ? Readable.from(slices(body), { objectMode: false }) : body;
  const gunzip = createGunzip({ chunkSize: 64 * 1024 });
  if (Buffer.isBuffer(body)) {
    // Written whole, it may be decompressed before anyone iterates it (the incremental parser is
    // loaded first): a truncated body's error would then find no listener and escape as an
    // uncaught exception. The iterator still throws it, from the stream's stored error.
    gunzip.on('error', () => {});
    gunzip.end(body);
    return gunzip;
  }
  // pipeline carries a socket error from the body into the gunzip stream we iterate
  pipeline(body, gunzip, () => {});
  return gunzip;
}

/** The incremental path from a raw body. Exported so tests can run it on the same bytes as the fast path. */
export function decodeStreamed(body: Readable | Buffer, opts: DecodeOptions = {}): AsyncGenerator<DecodedBatch> {
  return decodeStreamedBytes(decompressed(body, opts.gzip), opts);
}
