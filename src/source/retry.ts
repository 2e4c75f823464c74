import { ApiError } from '../errors.ts';

export interface RetryPolicy {
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 6, baseDelayMs: 250, maxDelayMs: 30_000 };

/** Statuses that say "later", not "never". */
export const RETRIABLE_STATUS = new Set([423, 429, 500, 502, 503, 504]);

const RETRIABLE_NETWORK = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EAI_AGAIN',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_RES_CONTENT_LENGTH_MISMATCH',
  'ERR_STREAM_PREMATURE_CLOSE',
  'Z_BUF_ERROR',
  'Z_DATA_ERROR',
]);

/** A retriable status, carrying the server's Retry-After (already converted to ms) when it sent one. */
export class RetriableStatus extends ApiError {
  readonly retryAfterMs: number | undefined;
  constructor(status: number, reason: string, retryAfterMs: number | undefined) {
    super('E_HTTP_RETRIES', reason, { status, retriable: true });
    this.retryAfterMs = retryAfterMs;
  }
}

export interface Verdict {
  retriable: boolean;
  reason: string;
  retryAfterMs?: number;
}

/** Decides once whether a failure is worth another attempt, and says why in words. */
export function classifyFailure(e: unknown): Verdict {
  if (e instanceof RetriableStatus) return { retriable: true, reason: e.message, retryAfterMs: e.retryAfterMs };
  if (e instanceof ApiError) return { retriable: e.retriable, reason: e.message };
  const code = (e as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && RETRIABLE_NETWORK.has(code)) {
    return { retriable: true, reason: `network error ${code}` };
  }
  return { retriable: false, reason: e instanceof Error ? e.message : String(e) };
}

/**
 * Retry-After as seconds or an HTTP date. A date is measured against the server's own Date header
 * when there is one, so a skewed local clock does not stretch or shrink the wait.
 */
export function parseRetryAfter(value: string | undefined, serverDate: Date | undefined, now = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - (serverDate?.getTime() ?? now));
}

/** Capped exponential backoff with full jitter; the server's Retry-After wins, capped at maxDelayMs. */
export function retryDelay(attempt: number, policy: RetryPolicy, retryAfterMs?: number, random = Math.random): number {
  if (retryAfterMs !== undefined) return Math.min(retryAfterMs, policy.maxDelayMs);
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, attempt - 1));
  return Math.floor(random() * ceiling);
}

export function retryPolicy(o?: Partial<RetryPolicy>): RetryPolicy {
  const p = { ...DEFAULT_RETRY, ...Object.fromEntries(Object.entries(o ?? {}).filter(([, v]) => v !== undefined)) };
  if (!(p.maxAttempts >= 1)) p.maxAttempts = 1;
  return p;
}
