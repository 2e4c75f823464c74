import { createRequire } from 'node:module';
import type { Dispatcher, Pool as PoolType } from 'undici';
import type { Readable } from 'node:stream';
import { constants, gunzipSync } from 'node:zlib';
import { ExportError } from '../errors.ts';

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Readable;
}

export interface RawRequest {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  headers: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
}

// undici's index also loads fetch, WebSocket, caches, mocks and proxies, about two thirds of its
// load time and none of it used here: the Pool class and its request() alone (undici has no
// exports map, so these paths are as public as its index; test/source covers them).
const requireHere = createRequire(import.meta.url);
const Pool = requireHere('undici/lib/dispatcher/pool.js') as typeof PoolType;
const poolRequest = requireHere('undici/lib/api/api-request.js') as (
  this: Dispatcher,
  opts: Dispatcher.RequestOptions,
) => Promise<Dispatcher.ResponseData>;

/** One keep-alive undici Pool per origin, so pages of the same domain reuse their connections. */
export class Pools {
  private readonly pools = new Map<string, PoolType>();
  constructor(private readonly connections: number) {}

  private pool(origin: string): PoolType {
    let p = this.pools.get(origin);
    if (p === undefined) {
      p = new Pool(origin, { connections: this.connections, pipelining: 1 });
      this.pools.set(origin, p);
    }
    return p;
  }

  async request(url: URL, req: RawRequest): Promise<RawResponse> {
    const res = await poolRequest.call(this.pool(url.origin), {
      path: `${url.pathname}${url.search}`,
      method: req.method,
      headers: req.headers,
      body: req.body,
      signal: req.signal,
    });
    return { status: res.statusCode, headers: res.headers, body: res.body };
  }

  async close(): Promise<void> {
    const all = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(all.map((p) => p.close()));
  }
}

export function header(res: RawResponse, name: string): string | undefined {
  const v = res.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Reads at most `limit` bytes of an error body (for its message), then lets the socket go. */
export async function readSmall(body: Readable, gzip: boolean, limit = 8192): Promise<string> {
  const chunks: Buffer[] = [];
  let n = 0;
  try {
    for await (const chunk of body) {
      chunks.push(chunk as Buffer);
      n += (chunk as Buffer).length;
      if (n >= limit) break;
    }
  } catch {
    // the status already says what happened; a broken error body adds nothing
  } finally {
    if (!body.destroyed) body.destroy();
  }
  let raw = Buffer.concat(chunks).subarray(0, limit);
  if (gzip) {
    try {
      // sync flush: a cut-off error body still yields what it has
      raw = gunzipSync(raw, { finishFlush: constants.Z_SYNC_FLUSH }).subarray(0, limit);
    } catch {
      return '';
    }
  }
  return raw.toString('utf8');
}

/** The message of a JSON error body ({message}, {error: {message}}, {error}), else the text itself. */
export function serverMessage(text: string): string {
  let j: unknown;
  try {
    j = JSON.parse(text);
  } catch {
    return text; // not JSON: use the text
  }
  const o = (j ?? {}) as { message?: unknown; error?: unknown; errors?: unknown };
  const inner = o.error as { message?: unknown } | undefined;
  const m = o.message ?? (typeof inner === 'object' && inner !== null && inner.message !== undefined ? inner.message : o.error) ?? o.errors;
  if (m === undefined) return text;
  return typeof m === 'string' ? m : JSON.stringify(m);
}

export function dateOf(res: RawResponse): Date | undefined {
  const v = header(res, 'date');
  if (v === undefined) return undefined;
  const d = new Date(v);
  return Number.isNaN(d.getTime()) ? undefined : d;
}

export function contentLength(res: RawResponse): number | undefined {
  const v = header(res, 'content-length');
  const n = v === undefined ? NaN : Number(v);
  return Number.isFinite(n) ? n : undefined;
}

/** gzip or identity; anything else we did not ask for and cannot read. */
export function isGzip(res: RawResponse, at: string): boolean {
  const enc = (header(res, 'content-encoding') ?? '').trim().toLowerCase();
  if (enc === '' || enc === 'identity') return false;
  if (enc === 'gzip' || enc === 'x-gzip') return true;
  res.body.destroy();
  throw new ExportError('E_PROTOCOL', `${at}: unsupported Content-Encoding ${JSON.stringify(enc.slice(0, 40))}`);
}
