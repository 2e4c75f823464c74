import { describe, expect, it } from 'vitest';
import { ApiClient, type ClientEvent } from '../../src/source/client.ts';
import { ApiError } from '../../src/errors.ts';
import { all, json, rows, useClientHarness } from './server.ts';

const TOKEN = 'tok-SECRET-456';
const { server, client } = useClientHarness(TOKEN);

describe('fatal statuses', () => {
  const cases: [number, string, RegExp][] = [
    [400, 'E_BAD_REQUEST', /query parameters/],
    [401, 'E_AUTH', /SCHOOL_API_TOKEN \/ --token-file/],
    [403, 'E_FORBIDDEN', /lacks the scope for this endpoint at this school/],
    [404, 'E_NOT_FOUND', /check the school id/],
    [422, 'E_VALIDATION', /fix what its message names/],
  ];
  for (const [status, code, fix] of cases) {
    it(`${status} → ${code}, one request, names school and endpoint, never the token`, async () => {
      // a hostile or careless server echoing the credentials back must not leak them into the message
      const s = await server((req, res) => json(res, status, { message: `bad thing; you sent ${req.headers.authorization} and ${TOKEN}` }));
      const events: ClientEvent[] = [];
      const c = client(s.url, { onEvent: (e) => events.push(e) });
      const err = await all(
        c.paginate('/schools/A42/achievements', {
          query: { updated_after: '2024-01-01 00:00:00' },
          ctx: { school: 'A42', endpoint: 'achievements' },
        }),
      ).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApiError);
      expect(err).toMatchObject({ code, status, retriable: false });
      const msg = (err as Error).message;
      expect(msg).toMatch(/^school A42, achievements: GET \/v1\.0\/schools\/A42\/achievements\?/);
      expect(msg).toMatch(fix);
      expect(msg).toContain('bad thing');
      expect(msg).not.toContain(TOKEN);
      expect(msg).not.toContain('\n');
      expect(JSON.stringify(events)).not.toContain(TOKEN);
      expect(s.requests).toHaveLength(1);
    });
  }

  it('gives up after maxAttempts with E_HTTP_RETRIES and the last reason', async () => {
    const s = await server((_req, res) => json(res, 502, { message: 'upstream down' }));
    const events: ClientEvent[] = [];
    const c = client(s.url, { retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 2 }, onEvent: (e) => events.push(e) });
    const err = await c.getJson('/schools/A1', { ctx: { school: 'A1', endpoint: 'school' } }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'E_HTTP_RETRIES', status: 502 });
    expect((err as Error).message).toMatch(
      /school A1, school: GET \/v1\.0\/schools\/A1: gave up after 3 attempts; last: .*502 \(upstream down\)/,
    );
    expect(s.requests).toHaveLength(3);
    expect(events.filter((e) => e.type === 'retry').map((e) => (e as { attempt: number }).attempt)).toEqual([1, 2]);
  });

  it('a query parameter that looks like a credential is masked in messages', async () => {
    const s = await server((_req, res) => json(res, 403, {}));
    const err = await client(s.url)
      .getJson('/schools', { query: { access_token: TOKEN } })
      .catch((e: unknown) => e);
    expect((err as Error).message).toContain('access_token=***');
    expect((err as Error).message).not.toContain(TOKEN);
  });

  it('invalid JSON on a 200 is fatal E_PROTOCOL after one request', async () => {
    const s = await server((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>maintenance</html>');
    });
    const err = await all(client(s.url).paginate('/schools', { ctx: { school: 'A1', endpoint: 'schools' } })).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'E_PROTOCOL' });
    expect((err as Error).message).toMatch(/^school A1, schools: GET /);
    expect(s.requests).toHaveLength(1);
  });
});

describe('getJson and send', () => {
  it('getJson returns a {data: {...}} body and the server date', async () => {
    const s = await server((_req, res) => json(res, 200, { data: { online: true } }, { date: 'Sun, 22 Nov 2026 01:02:03 GMT' }));
    const r = await client(s.url).getJson<{ data: { online: boolean } }>('/meta/schools/A1');
    expect(r.body.data.online).toBe(true);
    expect(r.serverDate?.toISOString()).toBe('2026-11-22T01:02:03.000Z');
  });

  it('send posts JSON, retries 429, and does not retry 500', async () => {
    let n = 0;
    const s = await server((req, res) => {
      n++;
      if (req.url.pathname.endsWith('/request-access')) {
        if (n === 1) return json(res, 429, {}, { 'retry-after': '0' });
        return json(res, 200, { success: true, state: 'pending', message: 'ok' });
      }
      json(res, 500, { message: 'boom' });
    });
    const c = client(s.url);
    const r = await c.send<{ state: string }>('POST', '/schools/A1/request-access', { body: { contacts: [{ first_name: 'a' }] } });
    expect(r).toEqual({ status: 200, body: { success: true, state: 'pending', message: 'ok' } });
    expect(s.requests).toHaveLength(2);
    expect(JSON.parse(s.requests[1].body)).toEqual({ contacts: [{ first_name: 'a' }] });
    expect(s.requests[1].headers['content-type']).toBe('application/json');
    const err = await c.send('DELETE', '/schools/A1/revoke-access', { ctx: { school: 'A1' } }).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 500, retriable: false });
    expect((err as Error).message).toMatch(/not retried/);
    expect(s.requests).toHaveLength(3);
  });

  it('send: a 4xx is fatal after one request', async () => {
    const s = await server((_req, res) => json(res, 422, { message: 'type code MERIT is disabled' }));
    const err = await client(s.url)
      .send('POST', '/schools/A1/achievements', { body: {}, ctx: { school: 'A1', endpoint: 'achievements' } })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'E_VALIDATION' });
    expect((err as Error).message).toContain('MERIT is disabled');
    expect(s.requests).toHaveLength(1);
  });

  it('refuses a path that could escape the API', async () => {
    const c = client('http://127.0.0.1:1');
    await expect(c.getJson('/schools/../../etc')).rejects.toMatchObject({ code: 'E_UNSAFE_ID' });
    await expect(c.getJson('/schools/A1?x=1')).rejects.toMatchObject({ code: 'E_UNSAFE_ID' });
  });
});

describe('allowlist', () => {
  it('refuses a school whose domain is not configured, sending nothing anywhere', async () => {
    const s = await server((_req, res) => json(res, 200, { data: rows(0, 1) }));
    const c = client(s.url, { domains: { 'api-apac.sandbox.test': s.url } });
    expect(c.isAllowed('api-africa.sandbox.test')).toBe(false);
    expect(() => c.baseFor('api-africa.sandbox.test')).toThrow(expect.objectContaining({ code: 'E_DOMAIN_NOT_ALLOWED' }));
    const err = await all(c.paginate('/schools/A9/achievements', { domain: 'api-africa.sandbox.test' })).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'E_DOMAIN_NOT_ALLOWED' });
    await expect(c.getJson('/meta/schools/A9', { domain: 'evil.example' })).rejects.toMatchObject({ code: 'E_DOMAIN_NOT_ALLOWED' });
    await expect(c.send('POST', '/schools/A9/request-access', { domain: 'evil.example' })).rejects.toMatchObject({
      code: 'E_DOMAIN_NOT_ALLOWED',
    });
    expect(s.requests).toHaveLength(0);
  });

  it('routes a mapped domain to its URL and knows the API host and allowed hosts', async () => {
    const main = await server((_req, res) => json(res, 200, { data: rows(0, 1) }));
    const apac = await server((_req, res) => json(res, 200, { data: rows(100, 1) }));
    const c = client(main.url, { domains: { 'API-APAC.sandbox.test': apac.url }, allowedHosts: ['api-africa.example'] });
    expect(c.baseFor()).toBe(`${main.url}/v1.0`);
    expect(c.baseFor('127.0.0.1:' + new URL(main.url).port)).toBe(`${main.url}/v1.0`);
    expect(c.baseFor('api-africa.example')).toBe('https://api-africa.example/v1.0');
    expect(c.isAllowed('api-apac.sandbox.test')).toBe(true);
    const b = await all(c.paginate('/schools/A5/achievements', { domain: 'api-apac.sandbox.test' }));
    expect((b[0].rows[0] as { id: string }).id).toBe('A100');
    expect(apac.requests).toHaveLength(1);
    expect(main.requests).toHaveLength(0);
  });

  it('rejects an API URL that is not http(s) as a config error', () => {
    expect(() => new ApiClient({ apiUrl: 'ftp://x', token: 't' })).toThrow(expect.objectContaining({ code: 'E_CONFIG' }));
  });
});
