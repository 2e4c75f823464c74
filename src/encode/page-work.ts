/**
 * The CPU work of one page, the same on the main thread and in a worker: gunzip, JSON.parse,
 * split into rows and meta, encode the rows for the task's format. Failures are the decoder's
 * own errors (src/decode): a body cut short is retriable (the page is fetched again), one that
 * is complete but wrong is not. Across a thread boundary they travel as plain data and are
 * rebuilt as the same ApiError (toWire / fromWire).
 */
import { ApiError, ExportError, type ErrorCode, type ErrorContext } from '../errors.ts';
import { gunzipWhole, parseBufferedPage, type PageMeta } from '../decode/index.ts';
import { compileResource, type CompiledResource, type EncodedPage, type PageEncoder } from './page-encoder.ts';
import type { TaskSetup } from './protocol.ts';

export interface ParsedPage {
  rows: unknown[];
  meta: PageMeta | undefined;
  /** decompressed bytes */
  bytes: number;
}

export function parsePage(body: Uint8Array, gzip: boolean): ParsedPage {
  const raw = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const decoded = gzip ? gunzipWhole(raw) : raw;
  const b = parseBufferedPage(decoded);
  return { rows: b.rows, meta: b.meta, bytes: b.bytes };
}

export type PageResult = EncodedPage;

const compiled = new Map<string, CompiledResource>();

/** A task's encoder on the calling thread: the resource's code is generated once per thread, format and options. */
export function encoderFor(setup: TaskSetup): PageEncoder {
  const key = JSON.stringify([setup.spec, setup.format, setup.formatOptions]);
  let c = compiled.get(key);
  if (!c) {
    c = compileResource(setup.spec, setup.format, setup.formatOptions);
    compiled.set(key, c);
  }
  return c.forTask(setup.ctx);
}

export function encodeParsed(encoder: PageEncoder, page: ParsedPage, keyField: string | undefined): PageResult {
  return encoder.encode(page.rows, keyField);
}

export interface WireError extends ErrorContext {
  kind: 'api' | 'export' | 'other';
  code: ErrorCode;
  message: string;
}

export function toWire(e: unknown): WireError {
  if (e instanceof ExportError) {
    const { school, resource, endpoint, status, retryable } = e;
    return {
      kind: e instanceof ApiError ? 'api' : 'export',
      code: e.code,
      message: e.message,
      school,
      resource,
      endpoint,
      status,
      retryable,
    };
  }
  return {
    kind: 'other',
    code: 'E_INTERNAL',
    message: `encoding worker failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`,
  };
}

/** The error as the main thread's own decoder would have thrown it (class, code, retryable, context). */
export function fromWire(w: WireError): ExportError {
  const { kind, code, message, ...ctx } = w;
  if (kind === 'api') return new ApiError(code, message, { ...ctx, retriable: ctx.retryable === true });
  return new ExportError(code, message, ctx);
}
