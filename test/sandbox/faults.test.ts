import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gunzipSync } from 'node:zlib';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { call } from './helpers.ts';

let sb: Sandbox;
/** Every wait the sandbox was asked to make (slow faults, latency): counted, never slept. */
const waits: number[] = [];
beforeAll(async () => {
  sb = await startSandbox({ sleep: (ms) => (waits.push(ms), Promise.resolve()) });
});
afterAll(() => sb.close());

const url = () => `${sb.url}/v1.0/schools/A1001/achievements`;

describe('faults', () => {
  it.each(['429', '500', '502', '503', '423'] as const)('%s answers that status once, in the error shape, then recovers', async (kind) => {
    sb.control.fault({ kind, retryAfter: kind === '429' ? 2 : undefined });
    const r = await call(url(), { token: sb.tokens.full });
    expect(r.status).toBe(Number(kind));
    expect(r.json.error.status).toBe(Number(kind));
    if (kind === '429') expect(r.headers['retry-after']).toBe('2');
    expect((await call(url(), { token: sb.tokens.full })).status).toBe(200);
  });

  it('honours times, path matching (substring and RegExp) and an HTTP-date Retry-After', async () => {
    sb.control.fault({ kind: '503', times: 2, path: '/deletions', retryAfter: 'Wed, 21 Oct 2026 07:28:00 GMT' });
    expect((await call(url(), { token: sb.tokens.full })).status).toBe(200);
    const d = `${sb.url}/v1.0/schools/A1001/deletions`;
    const first = await call(d, { token: sb.tokens.full });
    expect(first.status).toBe(503);
    expect(first.headers['retry-after']).toBe('Wed, 21 Oct 2026 07:28:00 GMT');
    expect((await call(d, { token: sb.tokens.full })).status).toBe(503);
    expect((await call(d, { token: sb.tokens.full })).status).toBe(200);
    sb.control.fault({ kind: '500', path: /page=2$/ });
    expect((await call(`${url()}?page=1`, { token: sb.tokens.full })).status).toBe(200);
    expect((await call(`${url()}?page=2`, { token: sb.tokens.full })).status).toBe(500);
  });

  it('reset drops the connection without a response', async () => {
    sb.control.fault({ kind: 'reset' });
    await expect(call(url(), { token: sb.tokens.full })).rejects.toThrow(/socket hang up|ECONNRESET/);
    const log = sb.control.requests();
    expect(log[log.length - 1].status).toBe(0);
  });

  it('truncated-gzip sends half a gzip body', async () => {
    sb.control.fault({ kind: 'truncated-gzip' });
    const r = await new Promise<{ headers: any; body: Buffer }>((resolve, reject) => {
      void import('node:http').then(({ get }) =>
        get(url(), { headers: { authorization: `Bearer ${sb.tokens.full}`, 'accept-encoding': 'gzip' } }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c) => chunks.push(c));
          res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
          res.on('error', reject);
        }).on('error', reject),
      );
    });
    expect(r.headers['content-encoding']).toBe('gzip');
    expect(() => gunzipSync(r.body)).toThrow(/unexpected end of file/);
  });

  it('slow delays the answer; latency applies to every page', async () => {
    waits.length = 0;
    sb.control.fault({ kind: 'slow', delayMs: 150 });
    expect((await call(url(), { token: sb.tokens.full })).status).toBe(200);
    expect(waits).toEqual([150]);
    sb.control.fault({ kind: 'slow' });
    await call(url(), { token: sb.tokens.full });
    expect(waits).toEqual([150, 1000]); // the default delay
    sb.control.latency(60);
    await call(url(), { token: sb.tokens.full });
    await call(`${url()}?page=2`, { token: sb.tokens.full });
    expect(waits).toEqual([150, 1000, 60, 60]);
    sb.control.latency(0);
    await call(url(), { token: sb.tokens.full });
    expect(waits).toEqual([150, 1000, 60, 60]);
  });

  it('logs requests with method, path and query, status and region', async () => {
    sb.control.clearRequests();
    await call(`${url()}?per_page=3`, { token: sb.tokens.full });
    await call(`${sb.regions[1].url}/v1.0/schools/A1002/deletions`, { token: 'bad' });
    expect(sb.control.requests().map(({ method, path, status, region }) => ({ method, path, status, region }))).toEqual([
      { method: 'GET', path: '/v1.0/schools/A1001/achievements?per_page=3', status: 200, region: 'uk' },
      { method: 'GET', path: '/v1.0/schools/A1002/deletions', status: 401, region: 'apac' },
    ]);
  });

  it('refuses unknown fault kinds', () => {
    expect(() => sb.control.fault({ kind: 'teapot' as never })).toThrow(/unknown fault kind/);
  });
});
