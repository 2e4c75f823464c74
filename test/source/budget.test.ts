import { describe, expect, it } from 'vitest';
import type { Clock } from '../../src/source/client.ts';
import { all, json, rows, useClientHarness } from './server.ts';

const TOKEN = 'tok-MAIN-111';
const SCHOOL_TOKEN = 'tok-SCHOOL-222';
const harness = useClientHarness(TOKEN);

/** A clock whose sleeps only move its own time: waits of minutes cost nothing. */
function fakeClock(): Clock & { waits: number[] } {
  let t = 1_000_000;
  const waits: number[] = [];
  return {
    waits,
    now: () => t,
    sleep: async (ms) => {
      waits.push(ms);
      t += ms;
    },
  };
}

describe('the retry budget', () => {
  it('waits out a 503 maintenance of minutes when the budget allows it', async () => {
    const s = await harness.server((_req, res, n) =>
      n <= 9 ? json(res, 503, { message: 'maintenance' }, { 'retry-after': '60' }) : json(res, 200, { data: rows(0, 2) }),
    );
    const clock = fakeClock();
    const c = harness.client(s.url, { clock, retry: { maxAttempts: 40, maxElapsedMs: 900_000, maxDelayMs: 30_000 } });
    const { body } = await c.getJson<{ data: unknown[] }>('/schools');
    expect(body.data).toHaveLength(2);
    expect(clock.waits).toEqual(Array(9).fill(30_000)); // Retry-After 60 s, capped at maxDelayMs
    expect(s.requests).toHaveLength(10);
  });

  it('gives up when the next wait would pass maxElapsedMs, with the request in fields', async () => {
    const s = await harness.server((_req, res) => json(res, 503, { message: 'maintenance' }, { 'retry-after': '30' }));
    const clock = fakeClock();
    const c = harness.client(s.url, { clock, retry: { maxAttempts: 100, maxElapsedMs: 100_000, maxDelayMs: 30_000 } });
    const err = await all(c.paginate('/schools/A7/achievements', { ctx: { school: 'A7', endpoint: 'achievements' } })).catch(
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ code: 'E_HTTP_RETRIES', status: 503, school: 'A7', endpoint: 'achievements', retryable: false });
    expect((err as Error).message).toMatch(/gave up after 4 attempts in 90s \(retry budget 100s\); last: .*503 \(maintenance\)/);
    expect(clock.waits).toEqual([30_000, 30_000, 30_000]);
  });

  it('the default budget is what it was: 6 attempts', async () => {
    const s = await harness.server((_req, res) => json(res, 500, {}));
    const clock = fakeClock();
    const err = await harness
      .client(s.url, { clock, retry: {} })
      .getJson('/schools')
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'E_HTTP_RETRIES', status: 500, endpoint: '/v1.0/schools' });
    expect(s.requests).toHaveLength(6);
  });
});

describe("a school's own token for one request", () => {
  it('is sent instead of the main token, on every page, and redacted like it', async () => {
    const s = await harness.server((req, res, n) => {
      if (req.url.pathname.endsWith('/forbidden')) return json(res, 403, { message: `you sent ${req.headers.authorization}` });
      const second = req.url.searchParams.get('cursor') === 'p2';
      if (n === 2) return json(res, 500, { message: `token ${SCHOOL_TOKEN} and ${TOKEN} rejected` });
      json(res, 200, {
        data: rows(second ? 2 : 0, 2),
        meta: { pagination: { next: second ? null : `${s.url}/v1.0/schools/A1/x?cursor=p2` } },
      });
    });
    const events: unknown[] = [];
    const c = harness.client(s.url, { onEvent: (e) => events.push(e) });
    const pages = await all(c.paginate('/schools/A1/x', { token: SCHOOL_TOKEN, ctx: { school: 'A1' } }));
    expect(pages.flatMap((p) => p.rows)).toHaveLength(4);
    expect(s.requests.map((r) => r.headers.authorization)).toEqual(Array(s.requests.length).fill(`Bearer ${SCHOOL_TOKEN}`));
    expect(JSON.stringify(events)).not.toContain(SCHOOL_TOKEN);
    expect(JSON.stringify(events)).not.toContain(TOKEN);

    await c.getJson('/schools/A1/y');
    expect(s.requests.at(-1)!.headers.authorization).toBe(`Bearer ${TOKEN}`); // only that request

    const err = await c.getJson('/schools/A1/forbidden', { token: SCHOOL_TOKEN }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'E_FORBIDDEN' });
    expect((err as Error).message).not.toContain(SCHOOL_TOKEN);
  });

  it('a token with a line break is refused before any request; an unknown domain too', async () => {
    const s = await harness.server((_req, res) => json(res, 200, { data: [] }));
    const c = harness.client(s.url);
    await expect(c.getJson('/schools', { token: 'a\nb', ctx: { school: 'A1' } })).rejects.toMatchObject({
      code: 'E_CONFIG',
      message: expect.stringContaining('school token of school A1'),
    });
    await expect(c.getJson('/schools', { token: SCHOOL_TOKEN, domain: 'evil.example' })).rejects.toMatchObject({
      code: 'E_DOMAIN_NOT_ALLOWED',
    });
    expect(s.requests).toHaveLength(0);
  });
});

describe('errors carry their request as fields', () => {
  it('a body that is not JSON: E_PROTOCOL with school and endpoint, named once in the message', async () => {
    const s = await harness.server((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"data": [1,2] nope');
    });
    const err = await harness
      .client(s.url)
      .getJson('/schools/A3', { ctx: { school: 'A3', endpoint: 'school' } })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'E_PROTOCOL', school: 'A3', endpoint: 'school' });
    expect((err as Error).message.match(/school A3, school: GET/g)).toHaveLength(1);
  });
});
