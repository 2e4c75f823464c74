import { describe, expect, it } from 'vitest';
import { classifyFailure, nextStep, parseRetryAfter, retryDelay, retryPolicy } from '../../src/source/retry.ts';
import { describeUrl, redactText } from '../../src/source/redact.ts';

describe('retry policy', () => {
  const p = retryPolicy({ baseDelayMs: 100, maxDelayMs: 1000 });

  it('defaults to 6 attempts within 2 minutes, 250 ms base, 30 s cap', () => {
    expect(retryPolicy()).toEqual({ maxAttempts: 6, maxElapsedMs: 120_000, baseDelayMs: 250, maxDelayMs: 30_000 });
    expect(retryPolicy({ maxAttempts: undefined }).maxAttempts).toBe(6);
  });

  it('stops at maxAttempts, or when the next wait would end past maxElapsedMs', () => {
    const q = retryPolicy({ maxAttempts: 40, maxElapsedMs: 900_000, maxDelayMs: 30_000 });
    expect(nextStep(1, 0, q, 30_000)).toEqual({ retry: true, delayMs: 30_000 });
    expect(nextStep(29, 840_000, q, 30_000)).toEqual({ retry: true, delayMs: 30_000 });
    expect(nextStep(30, 880_000, q, 30_000)).toEqual({ retry: false, why: 'gave up after 30 attempts in 880s (retry budget 900s)' });
    expect(nextStep(40, 0, q, 0)).toEqual({ retry: false, why: 'gave up after 40 attempts' });
  });

  it('full jitter under a doubling ceiling capped at maxDelayMs', () => {
    expect([1, 2, 3, 4, 5, 6].map((a) => retryDelay(a, p, undefined, () => 0.999999))).toEqual([99, 199, 399, 799, 999, 999]);
    expect(retryDelay(3, p, undefined, () => 0)).toBe(0);
  });

  it('Retry-After wins, capped', () => {
    expect(retryDelay(1, p, 400)).toBe(400);
    expect(retryDelay(1, p, 60_000)).toBe(1000);
  });

  it('parses Retry-After as seconds or an HTTP date against the server clock', () => {
    const server = new Date('2026-11-22T01:00:00Z');
    expect(parseRetryAfter('3', server)).toBe(3000);
    expect(parseRetryAfter('Sun, 22 Nov 2026 01:00:05 GMT', server)).toBe(5000);
    expect(parseRetryAfter('Sun, 22 Nov 2026 00:59:00 GMT', server)).toBe(0);
    expect(parseRetryAfter('soon', server)).toBeUndefined();
    expect(parseRetryAfter(undefined, server)).toBeUndefined();
  });

  it('network errors are retriable, programming errors are not', () => {
    expect(classifyFailure(Object.assign(new Error('x'), { code: 'ECONNRESET' })).retriable).toBe(true);
    expect(classifyFailure(Object.assign(new Error('x'), { code: 'UND_ERR_SOCKET' })).retriable).toBe(true);
    expect(classifyFailure(new TypeError('undefined is not a function')).retriable).toBe(false);
    expect(classifyFailure(Object.assign(new Error('x'), { code: 'ECONNREFUSED' }), 'api-apac.example:443').reason).toBe(
      'network error ECONNREFUSED from api-apac.example:443',
    );
  });
});

describe('redaction', () => {
  it('masks credential-like query values and the token in any form', () => {
    expect(describeUrl(new URL('http://h/v1.0/schools?per_page=5&api_key=abc&token=t1'))).toBe(
      '/v1.0/schools?per_page=5&api_key=***&token=***',
    );
    const tok = 'abc.DEF-123';
    const basic = Buffer.from(`${tok}:`).toString('base64');
    const out = redactText(`got ${tok}; Authorization: Basic ${basic}; Bearer ${tok}`, tok);
    expect(out).not.toContain(tok);
    expect(out).not.toContain(basic);
  });
});
