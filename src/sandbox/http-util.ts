/**
 * Response plumbing shared by every route: the one error body shape, JSON bodies gzip-compressed
 * at level 1 (fast: the benchmark measures the client, not this server), request bodies, auth.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { gzip } from 'node:zlib';
import { promisify } from 'node:util';

const gzipAsync = promisify(gzip);

const ERROR_CODES: Record<number, string> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  422: 'validation_failed',
  423: 'school_inactive',
  429: 'too_many_requests',
  500: 'internal_error',
  502: 'bad_gateway',
  503: 'service_unavailable',
};

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code: string = ERROR_CODES[status] ?? 'error',
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** A body already serialised (list pages are assembled as text: embedded objects are cached as JSON). */
export class RawJson {
  constructor(readonly text: string) {}
}

export function errorBody(status: number, code: string, message: string): unknown {
  return { error: { status, code, message } };
}

export interface SendOptions {
  headers?: Record<string, string>;
  /** Fault: send a gzip body cut in half (the HTTP framing itself completes normally). */
  truncateGzip?: boolean;
}

export async function sendJson(
  req: IncomingMessage,
  res: ServerResponse,
  status: number,
  body: unknown,
  opts: SendOptions = {},
): Promise<void> {
  const text = body instanceof RawJson ? body.text : body === undefined ? '' : JSON.stringify(body);
  const raw = Buffer.from(text, 'utf8');
  const wantsGzip = /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
  const headers: Record<string, string> = {
    'content-type': 'application/json; charset=utf-8',
    vary: 'Accept-Encoding',
    ...opts.headers,
  };
  if (opts.truncateGzip) {
    const gz = await gzipAsync(raw, { level: 1 });
    res.writeHead(status, { ...headers, 'content-encoding': 'gzip' });
    res.end(gz.subarray(0, Math.max(1, Math.floor(gz.length / 2))));
    return;
  }
  if (wantsGzip && raw.length > 0) {
    const gz = await gzipAsync(raw, { level: 1 });
    res.writeHead(status, { ...headers, 'content-encoding': 'gzip', 'content-length': String(gz.length) });
    res.end(gz);
    return;
  }
  res.writeHead(status, { ...headers, 'content-length': String(raw.length) });
  res.end(raw);
}

export function sendError(req: IncomingMessage, res: ServerResponse, e: HttpError): Promise<void> {
  return sendJson(req, res, e.status, errorBody(e.status, e.code, e.message), { headers: e.headers });
}

const MAX_BODY = 5 * 1024 * 1024;

/** The JSON request body; 400 when it is not JSON. An empty body reads as {}. */
export async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req as AsyncIterable<Buffer>) {
    size += c.length;
    if (size > MAX_BODY) throw new HttpError(400, 'request body too large');
    chunks.push(c);
  }
  const text = Buffer.concat(chunks).toString('utf8').trim();
  if (text === '') return {};
  try {
    return JSON.parse(text);
  } catch {
    throw new HttpError(400, 'request body is not valid JSON');
  }
}

/** The access token from Bearer or Basic ("<token>:" with an empty password) credentials. */
export function tokenOf(req: IncomingMessage): string | null {
  const h = req.headers.authorization;
  if (!h) return null;
  const m = /^(\w+)\s+(\S+)\s*$/.exec(h);
  if (!m) return null;
  const scheme = m[1].toLowerCase();
  if (scheme === 'bearer') return m[2];
  if (scheme === 'basic') {
    const decoded = Buffer.from(m[2], 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon <= 0 || colon !== decoded.length - 1) return null;
    return decoded.slice(0, colon);
  }
  return null;
}

export function delay(ms: number): Promise<void> {
  return ms > 0 ? new Promise((r) => setTimeout(r, ms)) : Promise.resolve();
}
