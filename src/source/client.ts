import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError, ConfigError, ExportError } from '../errors.ts';
import { decodePage, gunzipBuffer, parseJson, readAll, type DecodedBatch, type PageDecoder, type PageMeta } from '../decode/index.ts';
import { DomainTable } from './domains.ts';
import { contentLength, dateOf, isGzip, Pools, readSmall, serverMessage, header, type RawResponse } from './http.ts';
import { walkPages } from './prefetch.ts';
import { PageLinks, type PaginationMode } from './pagination.ts';
import { describeUrl, redactText, snippet } from './redact.ts';
import { classifyFailure, parseRetryAfter, retryDelay, retryPolicy, type RetryPolicy } from './retry.ts';
import { statusError, where, type RequestContext } from './status.ts';

export type { RequestContext };

export interface ClientOptions {
  apiUrl: string;
  token: string;
  auth?: 'bearer' | 'basic';
  domains?: Record<string, string>;
  allowedHosts?: string[];
  connectionsPerDomain?: number;
  retry?: { maxAttempts?: number; baseDelayMs?: number; maxDelayMs?: number };
  streamThresholdBytes?: number;
  onEvent?: (e: ClientEvent) => void;
}

export type ClientEvent =
  | { type: 'retry'; url: string; attempt: number; delayMs: number; reason: string }
  | { type: 'request'; url: string; status: number; bytes: number; ms: number };

export interface PageBatch {
  rows: unknown[];
  /** On a page's last batch, when another page follows: its path and query (what a checkpoint saves). */
  next?: string;
  page: number;
  last: boolean;
  final: boolean;
  bytes: number;
  meta?: PageMeta;
  serverDate?: Date;
  /** The page's rows encoded elsewhere, when the paginate call's decoder does that (DecodedBatch.encoded). */
  encoded?: unknown;
}

type Query = Record<string, string | number | boolean | undefined>;
type PageResult = DecodedBatch & { serverDate?: Date };

const SAFE_PATH = /^\/[A-Za-z0-9_\-./]*$/;

export class ApiClient {
  private readonly domains: DomainTable;
  private readonly pools: Pools;
  private readonly policy: RetryPolicy;
  private readonly authorization: string;
  private readonly token: string;
  private readonly threshold: number | undefined;
  private readonly onEvent: (e: ClientEvent) => void;
  private latestDate: Date | undefined;

  constructor(opts: ClientOptions) {
    if (typeof opts.token !== 'string' || opts.token === '' || /[\r\n]/.test(opts.token)) {
      throw new ConfigError('no usable access token: set SCHOOL_API_TOKEN or pass --token-file');
    }
    this.domains = new DomainTable(opts.apiUrl, opts.domains, opts.allowedHosts);
    this.pools = new Pools(opts.connectionsPerDomain ?? 8);
    this.policy = retryPolicy(opts.retry);
    this.token = opts.token;
    this.authorization = opts.auth === 'basic' ? `Basic ${Buffer.from(`${opts.token}:`).toString('base64')}` : `Bearer ${opts.token}`;
    this.threshold = opts.streamThresholdBytes;
    const sink = opts.onEvent;
    // a logging callback that throws must not break an export
    this.onEvent = sink
      ? (e) => {
          try {
            sink(e);
          } catch {
            /* ignored */
          }
        }
      : () => {};
  }

  baseFor(domain?: string): string {
    return this.domains.baseFor(domain);
  }

  isAllowed(domain?: string): boolean {
    return this.domains.isAllowed(domain);
  }

  serverNow(): Date | undefined {
    return this.latestDate;
  }

  async close(): Promise<void> {
    await this.pools.close();
  }

  async getJson<T = unknown>(
    path: string,
    o: { domain?: string; query?: Query; ctx?: RequestContext } = {},
  ): Promise<{ body: T; serverDate?: Date }> {
    const url = this.url(path, o.domain, o.query);
    const at = where('GET', describeUrl(url), o.ctx);
    for (let attempt = 1; ; attempt++) {
      try {
        const started = Date.now();
        const res = await this.get(url, at);
        const raw = await readAll(res.body);
        const decoded = isGzip(res, at) ? await gunzipBuffer(raw) : raw;
        const body = parseJson(decoded) as T;
        this.onEvent({ type: 'request', url: describeUrl(url), status: res.status, bytes: decoded.length, ms: Date.now() - started });
        return { body, serverDate: dateOf(res) };
      } catch (e) {
        await this.afterFailure(e, attempt, url, at);
      }
    }
  }

  async send<T = unknown>(
    method: 'POST' | 'PUT' | 'DELETE',
    path: string,
    o: { domain?: string; body?: unknown; ctx?: RequestContext } = {},
  ): Promise<{ status: number; body: T }> {
    const url = this.url(path, o.domain);
    const at = where(method, describeUrl(url), o.ctx);
    const headers: Record<string, string> = { authorization: this.authorization, accept: 'application/json' };
    const payload = o.body === undefined ? undefined : JSON.stringify(o.body);
    if (payload !== undefined) headers['content-type'] = 'application/json';
    // only 429 and 503 prove the server did not act on the request; anything else may have been applied
    const onlyRejected = (s: number) => s === 429 || s === 503;
    for (let attempt = 1; ; attempt++) {
      let res: RawResponse;
      const started = Date.now();
      try {
        res = await this.pools.request(url, { method, headers, body: payload });
      } catch (e) {
        throw new ApiError('E_HTTP_RETRIES', `${at}: ${classifyFailure(e).reason}; not retried, as the request may have been applied`, {
          retriable: false,
          cause: e,
        });
      }
      this.sawDate(res);
      if (res.status >= 200 && res.status < 300) {
        const text = (await readAll(res.body)).toString('utf8');
        this.onEvent({ type: 'request', url: describeUrl(url), status: res.status, bytes: text.length, ms: Date.now() - started });
        return { status: res.status, body: (text.trim() === '' ? undefined : safeParse(text)) as T };
      }
      const err = await this.failure(res, at, onlyRejected);
      this.onEvent({ type: 'request', url: describeUrl(url), status: res.status, bytes: 0, ms: Date.now() - started });
      await this.afterFailure(err, attempt, url, at);
    }
  }

  async *paginate(
    path: string,
    o: {
      domain?: string;
      query?: Query;
      mode?: PaginationMode;
      perPage?: number;
      include?: string[];
      ctx?: RequestContext;
      /** Start at this page (path and query, as a PageBatch's `next` gave it) instead of the first. */
      from?: string;
      /** Decodes each body instead of decodePage (src/encode: the page's CPU work in a worker thread). */
      decode?: PageDecoder;
    },
  ): AsyncGenerator<PageBatch> {
    const mode = o.mode ?? 'cursor';
    const query: Query = { ...o.query, per_page: o.perPage ?? 1000 };
    if (mode === 'cursor') query.cursor = true;
    if (o.include && o.include.length > 0) query.include = o.include.join(',');
    const url = o.from === undefined ? this.url(path, o.domain, query) : this.resumeUrl(o.from, o.domain);
    const links = new PageLinks(url, where('GET', describeUrl(url), o.ctx));
    for await (const { batch: b, page, final, next } of walkPages(url, links, (u, signal) =>
      this.pageWithRetries(u, o.ctx, signal, o.decode),
    )) {
      const nextPage = next ? `${next.pathname}${next.search}` : undefined;
      yield {
        rows: b.rows,
        page,
        last: b.last,
        final,
        bytes: b.bytes,
        meta: b.meta,
        serverDate: b.serverDate,
        ...(nextPage ? { next: nextPage } : {}),
        ...(b.encoded !== undefined ? { encoded: b.encoded } : {}),
      };
    }
  }

  /** A saved page (path and query) at the school's domain as configured now, never elsewhere. */
  private resumeUrl(pathAndQuery: string, domain: string | undefined): URL {
    const origin = new URL(this.domains.baseFor(domain)).origin;
    const url = new URL(pathAndQuery, origin);
    if (url.origin !== origin || !SAFE_PATH.test(url.pathname) || url.pathname.includes('..')) {
      throw new ExportError(
        'E_STATE',
        `refusing to resume from a saved page ${JSON.stringify(pathAndQuery.slice(0, 100))}: not a path of the API`,
      );
    }
    return url;
  }

  /** One page, retried as a whole; rows a cut-short attempt already yielded are skipped on the next. */
  private async *pageWithRetries(
    url: URL,
    ctx: RequestContext | undefined,
    signal: AbortSignal,
    decode: PageDecoder = decodePage,
  ): AsyncGenerator<PageResult> {
    const at = where('GET', describeUrl(url), ctx);
    let emitted = 0;
    for (let attempt = 1; ; attempt++) {
      try {
        const started = Date.now();
        const res = await this.get(url, at, signal);
        const serverDate = dateOf(res);
        const batches = decode(res.body, {
          gzip: isGzip(res, at),
          contentLength: contentLength(res),
          streamThresholdBytes: this.threshold,
          skipRows: emitted,
        });
        for await (const b of batches) {
          emitted += b.rows.length;
          if (b.last)
            this.onEvent({ type: 'request', url: describeUrl(url), status: res.status, bytes: b.bytes, ms: Date.now() - started });
          yield { ...b, serverDate };
        }
        return;
      } catch (e) {
        if (signal.aborted) throw e;
        await this.afterFailure(e, attempt, url, at, signal);
      }
    }
  }

  /** A GET whose status is 2xx, or the classified error for its status. */
  private async get(url: URL, at: string, signal?: AbortSignal): Promise<RawResponse> {
    const started = Date.now();
    const res = await this.pools.request(url, {
      method: 'GET',
      headers: { authorization: this.authorization, accept: 'application/json', 'accept-encoding': 'gzip' },
      signal,
    });
    this.sawDate(res);
    if (res.status >= 200 && res.status < 300) return res;
    const err = await this.failure(res, at);
    this.onEvent({ type: 'request', url: describeUrl(url), status: res.status, bytes: 0, ms: Date.now() - started });
    throw err;
  }

  private async failure(res: RawResponse, at: string, retriable?: (s: number) => boolean): Promise<ApiError> {
    const enc = (header(res, 'content-encoding') ?? '').toLowerCase();
    const text = await readSmall(res.body, enc.includes('gzip'));
    const retryAfter = parseRetryAfter(header(res, 'retry-after'), dateOf(res));
    return statusError(res.status, at, snippet(serverMessage(text), this.token), retryAfter, retriable);
  }

  /** Either waits for the next attempt or throws the error the caller should see. */
  private async afterFailure(e: unknown, attempt: number, url: URL, at: string, signal?: AbortSignal): Promise<void> {
    const v = classifyFailure(e);
    if (!v.retriable) throw this.contextualize(e, at);
    const reason = redactText(v.reason, this.token);
    if (attempt >= this.policy.maxAttempts) {
      throw new ApiError('E_HTTP_RETRIES', `${at}: gave up after ${attempt} attempts; last: ${reason}`, {
        retriable: false,
        status: e instanceof ApiError ? e.status : undefined,
        cause: e,
      });
    }
    const delayMs = retryDelay(attempt, this.policy, v.retryAfterMs);
    this.onEvent({ type: 'retry', url: describeUrl(url), attempt, delayMs, reason });
    await sleep(delayMs, undefined, signal ? { signal } : undefined);
  }

  /** Errors that do not name their request yet get the school, endpoint and URL in front. */
  private contextualize(e: unknown, at: string): unknown {
    if (e instanceof ExportError) {
      if (e.message.includes(at)) return e;
      const msg = `${at}: ${redactText(e.message, this.token)}`;
      return e instanceof ApiError
        ? new ApiError(e.code, msg, { status: e.status, retriable: false, cause: e })
        : new ExportError(e.code, msg, { cause: e });
    }
    const reason = redactText(e instanceof Error ? e.message : String(e), this.token);
    return new ApiError('E_PROTOCOL', `${at}: ${reason}`, { retriable: false, cause: e });
  }

  private url(path: string, domain: string | undefined, query?: Query): URL {
    if (!SAFE_PATH.test(path) || path.includes('..')) {
      throw new ExportError('E_UNSAFE_ID', `refusing API path ${JSON.stringify(path.slice(0, 100))}`);
    }
    const url = new URL(`${this.domains.baseFor(domain)}${path}`);
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    return url;
  }

  private sawDate(res: RawResponse): void {
    const d = dateOf(res);
    if (d) this.latestDate = d;
  }
}

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
