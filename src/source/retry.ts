import { setTimeout as sleepFor } from 'node:timers/promises';
import { ApiError } from '../errors.ts';

/**
 * How long one request keeps trying (undici's RetryHandler options, plus a wall-clock budget).
 * An attempt is not started when either limit is reached: maxAttempts counts the first attempt
 * too (--max-retries N is maxAttempts N + 1); maxElapsedMs bounds the time from the first
 * failure until the next attempt would start, waits included (--max-retry-seconds).
 *
 * Defaults: 6 attempts within 2 minutes, waits of 250 ms doubling (full jitter) up to 30 s; a
 * server's Retry-After is honoured up to maxDelayMs. A nightly run that should wait out a
 * maintenance window of 15 minutes: maxAttempts 40, maxElapsedMs 900_000.
 */
export interface RetryPolicy {
  maxAttempts: number;
  maxElapsedMs: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 6, maxElapsedMs: 120_000, baseDelayMs: 250, maxDelayMs: 30_000 };

/** Time as the retry loop sees it: injectable, so tests of waits do not wait. */
export interface Clock {
  now(): number;
  /** Resolves after ms, or rejects when signal aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const realClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) => sleepFor(ms, undefined, signal ? { signal } : undefined),
};

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

/**
 * Decides once whether a failure is worth another attempt, and says why in words. A network
 * error names the host it happened with (`host`: the request's), so "connection refused" says
 * which of the API URL and the regional domains refused.
 */
export function classifyFailure(e: unknown, host?: string): Verdict {
  if (e instanceof RetriableStatus) return { retriable: true, reason: e.message, retryAfterMs: e.retryAfterMs };
  if (e instanceof ApiError) return { retriable: e.retriable, reason: e.message };
  const code = (e as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && RETRIABLE_NETWORK.has(code)) {
    return { retriable: true, reason: `network error ${code}${host ? ` from ${host}` : ''}` };
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
  if (!(p.maxElapsedMs >= 0)) p.maxElapsedMs = 0;
  return p;
}

/** What to do after attempt `attempt` failed with a retriable error: wait `delayMs`, or stop. */
export function nextStep(
  attempt: number,
  elapsedMs: number,
  policy: RetryPolicy,
  retryAfterMs: number | undefined,
  random = Math.random,
): { retry: true; delayMs: number } | { retry: false; why: string } {
  if (attempt >= policy.maxAttempts) return { retry: false, why: `gave up after ${attempt} attempts` };
  const delayMs = retryDelay(attempt, policy, retryAfterMs, random);
  if (elapsedMs + delayMs > policy.maxElapsedMs) {
    return {
      retry: false,
      why: `gave up after ${attempt} attempts in ${seconds(elapsedMs)} (retry budget ${seconds(policy.maxElapsedMs)})`,
    };
  }
  return { retry: true, delayMs };
}

function seconds(ms: number): string {
  return `${Math.round(ms / 100) / 10}s`;
}
