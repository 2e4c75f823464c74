import type { Readable } from 'node:stream';
import { ApiError } from '../errors.ts';

/** What a list page carries besides its rows. */
export interface PageMeta {
  pagination?: unknown;
  includes?: string[];
}

/** One slice of a decoded page: a buffered page is one batch, a streamed page several. */
export interface DecodedBatch {
  rows: unknown[];
  /** The page's last batch: meta and bytes are set on it only. */
  last: boolean;
  /** Decoded (decompressed) body bytes of the page; 0 except on the last batch. */
  bytes: number;
  meta?: PageMeta;
  /**
   * Set by a decoder that hands the page's CPU work to src/encode (worker threads): the rows are
   * encoded there and not materialised here (`rows` is empty); the pipeline awaits this instead.
   */
  encoded?: unknown;
}

/** Turns one response body into batches; decodePage is the default, src/encode supplies another. */
export type PageDecoder = (body: Readable, opts: DecodeOptions) => AsyncGenerator<DecodedBatch>;

export interface DecodeOptions {
  /** The body is gzip-compressed (Content-Encoding: gzip). */
  gzip?: boolean;
  /** Wire length from Content-Length, when the server sent one. */
  contentLength?: number;
  /** Pages above this many bytes are parsed incrementally. Default 8 MiB. */
  streamThresholdBytes?: number;
  /** Rows per batch on the streamed path. Default 1000. */
  batchSize?: number;
}

export const DEFAULT_STREAM_THRESHOLD = 8 * 1024 * 1024;
export const DEFAULT_BATCH_SIZE = 1000;

/** The body was cut short (truncated gzip, JSON that ends early): worth fetching the page again. */
export function truncatedBody(reason: string, cause?: unknown): ApiError {
  return new ApiError('E_PROTOCOL', `response body ${reason}`, { retriable: true, cause });
}

/** The body is complete but not what the contract allows: retrying would not help. */
export function badBody(reason: string, cause?: unknown): ApiError {
  return new ApiError('E_PROTOCOL', `response body is not a valid list response: ${reason}`, {
    retriable: false,
    cause,
  });
}

const GZIP_TRUNCATED = new Set(['Z_BUF_ERROR', 'Z_DATA_ERROR', 'ERR_STREAM_PREMATURE_CLOSE']);

/** Maps a zlib failure to a retriable error; other errors (sockets, ours) pass through unchanged. */
export function classifyStreamError(e: unknown): unknown {
  const code = (e as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && GZIP_TRUNCATED.has(code)) {
    return truncatedBody(`could not be decompressed (${code}): truncated or invalid gzip`, e);
  }
  return e;
}

/**
 * Splits a parsed list response into rows and meta. `{data: {...}}` (the meta resources) is one row.
 */
export function splitListBody(parsed: unknown): { rows: unknown[]; meta: PageMeta | undefined } {
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw badBody('expected a JSON object with a "data" member');
  }
  const body = parsed as { data?: unknown; meta?: unknown };
  const data = body.data;
  let rows: unknown[];
  if (Array.isArray(data)) rows = data;
  else if (data !== null && typeof data === 'object') rows = [data];
  else throw badBody('"data" is missing or not an array/object');
  return { rows, meta: toPageMeta(body.meta) };
}

export function toPageMeta(meta: unknown): PageMeta | undefined {
  if (meta === null || typeof meta !== 'object') return undefined;
  const m = meta as { pagination?: unknown; includes?: unknown };
  const out: PageMeta = {};
  if (m.pagination !== undefined) out.pagination = m.pagination;
  if (Array.isArray(m.includes)) out.includes = m.includes.filter((x): x is string => typeof x === 'string');
  return out;
}

/** V8's messages for JSON cut short, as opposed to JSON that is wrong. */
export function isTruncatedJson(e: unknown): boolean {
  return e instanceof SyntaxError && /Unexpected end of JSON input|Unterminated string|Unexpected end of input/i.test(e.message);
}
