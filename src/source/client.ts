import { ApiError, ConfigError, ExportError, type ErrorContext } from '../errors.ts';
import { decodePage, gunzipBuffer, parseJson, readAll, type DecodedBatch, type PageDecoder, type PageMeta } from '../decode/index.ts';
import { DomainTable } from './domains.ts';
import { contentLength, dateOf, isGzip, Pools, readSmall, serverMessage, header, type RawResponse } from './http.ts';
import { walkPages } from './prefetch.ts';
import { PageLinks, type PaginationMode } from './pagination.ts';
import { describeUrl, redactText, snippet } from './redact.ts';
import { classifyFailure, nextStep, parseRetryAfter, realClock, retryPolicy, type Clock, type RetryPolicy } from './retry.ts';
import { fieldsOf, statusError, where, type RequestContext } from './status.ts';

export type { RequestContext };
export type { Clock, RetryPolicy };

export interface ClientOptions {
  apiUrl: string;
  token: string;
  auth?: 'bearer' | 'basic';
  domains?: Record<string, string>;
  allowedHosts?: string[];
  connectionsPerDomain?: number;
  /** The retry budget of each request (retry.ts documents the defaults). */
  retry?: Partial<RetryPolicy>;
  streamThresholdBytes?: number;
  onEvent?: (e: ClientEvent) => void;
  /** Time for retry waits; tests inject one so a Retry-After of seconds costs none. */
  clock?: Clock;
  /** Aborts every request and retry wait at once (a run interrupted by SIGINT/SIGTERM stops promptly). */
  signal?: AbortSignal;
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

/** A row's identity; undefined when the row has none (such rows are never dropped as repeats). */
export type RowKey = (row: unknown) => string | undefined;

/** What every request may carry besides its path. */
export interface RequestOptions {
  domain?: string;
  ctx?: RequestContext;
  /**
   * A school's own token (delivered by a schoolApproved webhook) instead of the client's: sent
   * only to configured domains like the main token, and redacted from every message alike.
   */
  token?: string;
}

type Query = Record<string, string | number | boolean | undefined>;
type PageResult = DecodedBatch & { serverDate?: Date };

/** One request as the retry loop and the messages see it. */
interface Call {
  url: URL;
  /** "school A1, achievements: GET /v1.0/…", the head of every message. */
  at: string;
  fields: ErrorContext;
  authorization: string;
  /** Every secret this request could echo: redacted from anything shown. */
  secrets: readonly string[];
  signal?: AbortSignal;
}

const SAFE_PATH = /^\/[A-Za-z0-9_\-./]*$/;

export class ApiClient {
  private readonly domains: DomainTable;
  private readonly pools: Pools;
  private readonly policy: RetryPolicy;
  private readonly auth: 'bearer' | 'basic';
  private readonly token: string;
  private readonly threshold: number | undefined;
  private readonly clock: Clock;
  private readonly signal: AbortSignal | undefined;
  private readonly onEvent: (e: ClientEvent) => void;
  private latestDate: Date | undefined;

  constructor(opts: ClientOptions) {
    if (!usableToken(opts.token)) throw new ConfigError('no usable access token: set SCHOOL_API_TOKEN or pass --token-file');
    this.domains = new DomainTable(opts.apiUrl, opts.domains, opts.allowedHosts);
    this.pools = new Pools(opts.connectionsPerDomain ?? 8);
    this.policy = retryPolicy(opts.retry);
    this.token = opts.token;
    this.auth = opts.auth ?? 'bearer';
    this.threshold = opts.streamThresholdBytes;
    this.clock = opts.clock ?? realClock;
    this.signal = opts.signal;
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

  async getJson<T = unknown>(path: string, o: RequestOptions & { query?: Query } = {}): Promise<{ body: T; serverDate?: Date }> {
    const call = this.call('GET', this.url(path, o.domain, o.query), o);
    return first(
      this.retrying(call, async function* (this: ApiClient) {
        const started = this.clock.now();
        const res = await this.get(call);
        const raw = await readAll(res.body);
        const decoded = isGzip(res, call.at) ? await gunzipBuffer(raw) : raw;
        const body = parseJson(decoded) as T;
        this.onEvent({
          type: 'request',
          url: describeUrl(call.url),
          status: res.status,
          bytes: decoded.length,
          ms: this.clock.now() - started,
        });
        yield { body, serverDate: dateOf(res) };
      }),
    );
  }

  async send<T = unknown>(
    method: 'POST' | 'PUT' | 'DELETE',
    path: string,
    o: RequestOptions & { body?: unknown } = {},
  ): Promise<{ status: number; body: T }> {
    const call = this.call(method, this.url(path, o.domain), o);
    const headers: Record<string, string> = { authorization: call.authorization, accept: 'application/json' };
    const payload = o.body === undefined ? undefined : JSON.stringify(o.body);
    if (payload !== undefined) headers['content-type'] = 'application/json';
    // only 429 and 503 prove the server did not act on the request; anything else may have been applied
    const onlyRejected = (s: number) => s === 429 || s === 503;
    return first(
      this.retrying(call, async function* (this: ApiClient) {
        let res: RawResponse;
        const started = this.clock.now();
        try {
          res = await this.pools.request(call.url, { method, headers, body: payload, signal: call.signal });
        } catch (e) {
          const reason = redactText(classifyFailure(e).reason, call.secrets);
          throw new ApiError('E_HTTP_RETRIES', `${call.at}: ${reason}; not retried, as the request may have been applied`, {
            ...call.fields,
            retriable: false,
            cause: e,
          });
        }
        this.sawDate(res);
        const ms = () => this.clock.now() - started;
        if (res.status >= 200 && res.status < 300) {
          const text = (await readAll(res.body)).toString('utf8');
          this.onEvent({ type: 'request', url: describeUrl(call.url), status: res.status, bytes: text.length, ms: ms() });
          yield { status: res.status, body: (text.trim() === '' ? undefined : safeParse(text)) as T };
          return;
        }
        const err = await this.failure(res, call, onlyRejected);
        this.onEvent({ type: 'request', url: describeUrl(call.url), status: res.status, bytes: 0, ms: ms() });
        throw err;
      }),
    );
  }

  async *paginate(
    path: string,
    o: RequestOptions & {
      query?: Query;
      mode?: PaginationMode;
      perPage?: number;
      include?: string[];
      /** A row's identity (the resource's key), so a page fetched again after a mid-body failure resumes without loss or repeats. */
      rowKey?: RowKey;
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
    const links = new PageLinks(url, where('GET', describeUrl(url), o.ctx), fieldsOf(o.ctx, url));
    const open = (u: URL, signal: AbortSignal) =>
      this.pageWithRetries(
        { ...this.call('GET', u, o), signal: this.signal ? AbortSignal.any([signal, this.signal]) : signal },
        o.rowKey,
        o.decode,
      );
    for await (const { batch: b, page, final, next } of walkPages(url, links, open)) {
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

  /**
   * One page, retried as a whole. A streamed page can fail after some of its rows were yielded;
   * the next attempt reads the whole page again and drops the rows whose key an earlier attempt
   * already yielded. Never by count: rows deleted or added upstream between the two requests
   * shift positions, and skipping by position would lose rows for good. Without a key function
   * everything is yielded again (loaders resolve duplicates; nothing resolves a loss).
   * Keys are taken only from batches that are not a page's last (a streamed page's early batches),
   * so the buffered path and the end of every page do no per-row work here.
   */
  private pageWithRetries(call: Call, rowKey: RowKey | undefined, decode: PageDecoder = decodePage): AsyncGenerator<PageResult> {
    let yielded: Set<string> | undefined;
    return this.retrying(call, async function* (this: ApiClient) {
      const already = yielded;
      const started = this.clock.now();
      const res = await this.get(call);
      const serverDate = dateOf(res);
      const batches = decode(res.body, {
        gzip: isGzip(res, call.at),
        contentLength: contentLength(res),
        streamThresholdBytes: this.threshold,
      });
      for await (const b of batches) {
        const rows = already ? withoutKeys(b.rows, rowKey, already) : b.rows;
        if (!b.last && rowKey) yielded = addKeys(yielded, rows, rowKey);
        if (b.last)
          this.onEvent({ type: 'request', url: describeUrl(call.url), status: res.status, bytes: b.bytes, ms: this.clock.now() - started });
        yield { ...b, rows, serverDate };
      }
    });
  }

  /**
   * The one retry loop (undici's RetryHandler in spirit): runs `attempt` until it completes,
   * passing on what it yields; a failure is classified once, then either waited out within the
   * budget (attempts and elapsed time) or thrown with the request named.
   */
  private async *retrying<T>(call: Call, attempt: (this: ApiClient) => AsyncGenerator<T>): AsyncGenerator<T> {
    // the budget runs from the first failure: a long page read slowly by its consumer spends none of it
    let firstFailure: number | undefined;
    for (let n = 1; ; n++) {
      try {
        yield* attempt.call(this);
        return;
      } catch (e) {
        if (call.signal?.aborted) throw e;
        const v = classifyFailure(e, call.url.host);
        if (!v.retriable) throw this.contextualize(e, call);
        const reason = redactText(v.reason, call.secrets);
        firstFailure ??= this.clock.now();
        const step = nextStep(n, this.clock.now() - firstFailure, this.policy, v.retryAfterMs);
        if (!step.retry) {
          throw new ApiError('E_HTTP_RETRIES', `${call.at}: ${step.why}; last: ${reason}`, {
            ...call.fields,
            retriable: false,
            status: e instanceof ApiError ? e.status : undefined,
            cause: e,
          });
        }
        this.onEvent({ type: 'retry', url: describeUrl(call.url), attempt: n, delayMs: step.delayMs, reason });
        await this.clock.sleep(step.delayMs, call.signal);
      }
    }
  }

  /** A GET whose status is 2xx, or the classified error for its status. */
  private async get(call: Call): Promise<RawResponse> {
    const started = this.clock.now();
    const res = await this.pools.request(call.url, {
      method: 'GET',
      headers: { authorization: call.authorization, accept: 'application/json', 'accept-encoding': 'gzip' },
      signal: call.signal,
    });
    this.sawDate(res);
    if (res.status >= 200 && res.status < 300) return res;
    const err = await this.failure(res, call);
    this.onEvent({ type: 'request', url: describeUrl(call.url), status: res.status, bytes: 0, ms: this.clock.now() - started });
    throw err;
  }

  private async failure(res: RawResponse, call: Call, retriable?: (s: number) => boolean): Promise<ApiError> {
    const enc = (header(res, 'content-encoding') ?? '').toLowerCase();
    const text = await readSmall(res.body, enc.includes('gzip'));
    const retryAfter = parseRetryAfter(header(res, 'retry-after'), dateOf(res));
    return statusError(res.status, call.at, snippet(serverMessage(text), call.secrets), retryAfter, retriable, call.fields);
  }

  /**
   * Errors that do not name their request yet (decode, zlib, sockets) get the request in front
   * and its fields. The client's own errors carry `endpoint` from the start: that field, not
   * the message text, says an error already names its request.
   */
  private contextualize(e: unknown, call: Call): unknown {
    if (e instanceof ExportError) {
      if (e.endpoint !== undefined) return e;
      const msg = `${call.at}: ${redactText(e.message, call.secrets)}`;
      return e instanceof ApiError
        ? new ApiError(e.code, msg, { ...call.fields, status: e.status, retriable: false, cause: e })
        : new ExportError(e.code, msg, { ...call.fields, cause: e });
    }
    const reason = redactText(e instanceof Error ? e.message : String(e), call.secrets);
    return new ApiError('E_PROTOCOL', `${call.at}: ${reason}`, { ...call.fields, retriable: false, cause: e });
  }

  private call(method: string, url: URL, o: RequestOptions): Call {
    const at = where(method, describeUrl(url), o.ctx);
    let token = this.token;
    if (o.token !== undefined) {
      if (!usableToken(o.token)) {
        const whose = o.ctx?.school ? ` of school ${o.ctx.school}` : '';
        throw new ConfigError(`the school token${whose} is empty or has a line break in it; deliver it again (schoolApproved)`);
      }
      token = o.token;
    }
    const authorization = this.auth === 'basic' ? `Basic ${Buffer.from(`${token}:`).toString('base64')}` : `Bearer ${token}`;
    const secrets = token === this.token ? [this.token] : [this.token, token];
    return { url, at, fields: fieldsOf(o.ctx, url), authorization, secrets, ...(this.signal ? { signal: this.signal } : {}) };
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

/** A token that fits in a header: not empty, no line break (header injection). */
function usableToken(token: unknown): token is string {
  return typeof token === 'string' && token !== '' && !/[\r\n]/.test(token);
}

/** The single value a one-shot attempt yields. */
async function first<T>(gen: AsyncGenerator<T>): Promise<T> {
  for await (const v of gen) return v;
  throw new ExportError('E_INTERNAL', 'a request attempt completed without a result');
}

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The rows whose key is not in `seen` (rows without a key are kept: a repeat is harmless, a loss is not). */
function withoutKeys(rows: unknown[], rowKey: RowKey | undefined, seen: Set<string>): unknown[] {
  if (!rowKey) return rows;
  return rows.filter((r) => {
    const k = rowKey(r);
    return k === undefined || !seen.has(k);
  });
}

function addKeys(into: Set<string> | undefined, rows: unknown[], rowKey: RowKey): Set<string> {
  const set = into ?? new Set<string>();
  for (const r of rows) {
    const k = rowKey(r);
    if (k !== undefined) set.add(k);
  }
  return set;
}
