import { gunzip, gunzipSync } from 'node:zlib';
import { promisify } from 'node:util';
import type { Readable } from 'node:stream';
import {
  badBody,
  classifyStreamError,
  isTruncatedJson,
  splitListBody,
  truncatedBody,
  type DecodedBatch,
  type DecodeOptions,
} from './types.ts';
import { markPage } from './page-marks.ts';
import { mayHoldLoneSurrogates } from './well-formed.ts';

const gunzipAsync = promisify(gunzip);
/** Compressed bytes below which gunzip runs inline (a school's meta, ACL, a page of a few rows). */
const SMALL_BODY = 16 * 1024;

/**
 * The fast path: the whole (decompressed) page in one buffer, one JSON.parse, one batch.
 * Pure over bytes so the streamed path can be checked against it.
 */
export function parseBufferedPage(decoded: Buffer): DecodedBatch {
  const parsed = parseJson(decoded);
  const { rows, meta } = splitListBody(parsed);
  // no surrogate escape in the bytes: no lone surrogate in the rows, nothing to walk later
  markPage(rows, { clean: !mayHoldLoneSurrogates(decoded), bytes: decoded.length });
  return { rows, last: true, bytes: decoded.length, meta };
}

/** JSON.parse with the two failure kinds told apart: cut short (retry) or wrong (fatal). */
export function parseJson(decoded: Buffer): unknown {
  try {
    return JSON.parse(decoded.toString('utf8'));
  } catch (e) {
    if (isTruncatedJson(e) || decoded.length === 0) throw truncatedBody('ended early (incomplete JSON)', e);
    throw badBody((e as Error).message, e);
  }
}

/** Decompresses a whole body held in memory (a small one at once: the thread pool's round trip costs more). */
export async function gunzipBuffer(raw: Buffer): Promise<Buffer> {
  if (raw.length <= SMALL_BODY) return gunzipWhole(raw);
  try {
    return await gunzipAsync(raw, { chunkSize: outputPiece(raw) });
  } catch (e) {
    throw classifyStreamError(e);
  }
}

/** gunzipBuffer on this thread, at once (a worker's page: its thread does nothing else meanwhile). */
export function gunzipWhole(raw: Buffer): Buffer {
  try {
    return gunzipSync(raw, { chunkSize: outputPiece(raw) });
  } catch (e) {
    throw classifyStreamError(e);
  }
}

/**
 * zlib's output piece for a whole body: the size its gzip trailer gives (a little over, so zlib
 * ends in it), so the body comes out in one buffer instead of 16 KB pieces concatenated at the
 * end. The trailer is only a hint (several members: the last one's size; a lying one: more
 * pieces follow), hence bounded.
 */
function outputPiece(raw: Buffer): number {
  const size = raw.length >= 18 ? raw.readUInt32LE(raw.length - 4) : 0;
  return Math.min(Math.max(16 * 1024, size + 64), 8 * 1024 * 1024);
}

/** Reads a stream to its end into one Buffer. */
export async function readAll(source: AsyncIterable<Buffer>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of source) chunks.push(chunk);
  } catch (e) {
    throw classifyStreamError(e);
  }
  return chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
}

/** The fast path from a raw body (Buffer or stream), gzip or not. Exported so tests can compare paths. */
export async function decodeBuffered(body: Readable | Buffer, opts: DecodeOptions = {}): Promise<DecodedBatch> {
  const raw = Buffer.isBuffer(body) ? body : await readAll(body);
  const decoded = opts.gzip ? await gunzipBuffer(raw) : raw;
  return parseBufferedPage(decoded);
}
