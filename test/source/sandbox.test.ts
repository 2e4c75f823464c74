import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { ApiClient, type ClientEvent } from '../../src/source/client.ts';

const BIG = 'A1002'; // the apac school of the seeded sandbox
const ROWS = 10_000;
let sb: Sandbox;
let domain: string;

beforeAll(async () => {
  sb = await startSandbox({ schools: 3, achievementsPerSchool: 40, bigSchools: { [BIG]: ROWS }, maxPerPage: 500 });
  const c = new ApiClient({ apiUrl: sb.url, token: sb.tokens.full, domains: sb.domains });
  const schools = await c.getJson<{ data: { id: string; region: { domain: string } }[] }>('/schools');
  await c.close();
  domain = schools.body.data.find((s) => s.id === BIG)!.region.domain;
});
afterAll(async () => {
  await sb?.close();
});

function client(events: ClientEvent[] = [], extra: Partial<ConstructorParameters<typeof ApiClient>[0]> = {}) {
  return new ApiClient({
    apiUrl: sb.url,
    token: sb.tokens.full,
    domains: sb.domains,
    retry: { baseDelayMs: 1, maxDelayMs: 10 },
    onEvent: (e) => events.push(e),
    ...extra,
  });
}
const idOf = (r: unknown) => (r as { id: string }).id;

describe('against the sandbox', () => {
  it('a 10,000-row cursor walk returns every row exactly once while rows change between pages', async () => {
    const expected = sb.control.records(BIG, 'achievements').map(idOf);
    expect(expected).toHaveLength(ROWS);
    const c = client();
    const seen = new Map<string, number>();
    let pages = 0;
    try {
      for await (const b of c.paginate(`/schools/${BIG}/achievements`, {
        domain,
        include: ['students'],
        ctx: { school: BIG, endpoint: 'achievements' },
      })) {
        for (const r of b.rows) seen.set(idOf(r), (seen.get(idOf(r)) ?? 0) + 1);
        if (b.last) {
          pages = b.page;
          // touch a row already read and one not yet read: both move in updated_at order, neither in the cursor walk
          const done = expected[Math.floor(seen.size / 2)];
          const ahead = expected[Math.min(ROWS - 1, seen.size + 250 + pages)];
          sb.control.update(BIG, 'achievements', done, { comment: `changed at page ${b.page}` });
          sb.control.update(BIG, 'achievements', ahead, { comment: `changed at page ${b.page}` });
        }
      }
    } finally {
      await c.close();
    }
    expect(pages).toBe(ROWS / 500); // per_page 1000 asked, 500 allowed
    expect([...seen.values()].every((n) => n === 1)).toBe(true);
    expect(new Set(seen.keys())).toEqual(new Set(expected));
  });

  it('recovers from the sandbox faults mid-walk without losing or repeating rows', async () => {
    const school = 'A1001';
    const schools = await client().getJson<{ data: { id: string; region: { domain: string } }[] }>('/schools');
    const home = schools.body.data.find((s) => s.id === school)!.region.domain;
    const expected = sb.control.records(school, 'achievements').map(idOf);
    for (const kind of ['reset', 'truncated-gzip', '500', '502', '503', '423'] as const) {
      sb.control.fault({ kind, path: `/schools/${school}/achievements`, times: 1 });
    }
    sb.control.fault({ kind: '429', path: `/schools/${school}/achievements`, retryAfter: 0 });
    const events: ClientEvent[] = [];
    const c = client(events, { retry: { maxAttempts: 10, baseDelayMs: 1, maxDelayMs: 10 } });
    const got: string[] = [];
    try {
      for await (const b of c.paginate(`/schools/${school}/achievements`, { domain: home, perPage: 10 })) got.push(...b.rows.map(idOf));
    } finally {
      await c.close();
    }
    expect(got).toEqual(expected);
    expect(events.filter((e) => e.type === 'retry')).toHaveLength(7);
  });

  it('streamed pages cut mid-body by the sandbox are fetched again without repeating rows', async () => {
    // a sandbox of its own with 5,000-row pages, so each page streams in several batches
    const big = await startSandbox({ schools: 2, achievementsPerSchool: 10, bigSchools: { [BIG]: ROWS }, maxPerPage: 5000 });
    const expected = big.control.records(BIG, 'achievements').map(idOf);
    big.control.fault({ kind: 'truncated-gzip', path: 'cursor=', times: 1 });
    big.control.fault({ kind: 'reset', path: `/schools/${BIG}/achievements`, times: 1 });
    const events: ClientEvent[] = [];
    const c = new ApiClient({
      apiUrl: big.url,
      token: big.tokens.full,
      domains: big.domains,
      retry: { baseDelayMs: 1, maxDelayMs: 10 },
      streamThresholdBytes: 32 * 1024,
      onEvent: (e) => events.push(e),
    });
    const got: string[] = [];
    let batches = 0;
    try {
      for await (const b of c.paginate(`/schools/${BIG}/achievements`, {
        domain,
        perPage: 5000,
        include: ['students', 'employees'],
        rowKey: idOf,
      })) {
        got.push(...b.rows.map(idOf));
        batches++;
      }
    } finally {
      await c.close();
      await big.close();
    }
    expect(batches).toBeGreaterThanOrEqual(10); // two pages, each streamed in batches of about 1,000 rows
    expect(events.filter((e) => e.type === 'retry')).toHaveLength(2);
    expect(new Set(got).size).toBe(got.length);
    expect(got).toEqual(expected);
  });

  it('refuses a school on a domain it was not told about, and the sandbox sees nothing', async () => {
    sb.control.clearRequests();
    const c = client([], { domains: {} });
    const err = await (async () => {
      for await (const _ of c.paginate(`/schools/${BIG}/achievements`, { domain })) void _;
    })().catch((e: unknown) => e);
    await c.close();
    expect(err).toMatchObject({ code: 'E_DOMAIN_NOT_ALLOWED' });
    expect(sb.control.requests()).toHaveLength(0);
  });

  it('a limited token reads achievements but gets a one-line 403 on assessment results, one request, no token', async () => {
    const c = new ApiClient({ apiUrl: sb.url, token: sb.tokens.limited, domains: sb.domains });
    sb.control.clearRequests();
    try {
      let n = 0;
      for await (const b of c.paginate('/schools/A1001/achievements', { ctx: { school: 'A1001', endpoint: 'achievements' } }))
        n += b.rows.length;
      expect(n).toBe(40);
      sb.control.clearRequests();
      const err = await (async () => {
        for await (const _ of c.paginate('/schools/A1001/assessment/results', { ctx: { school: 'A1001', endpoint: 'assessment_results' } }))
          void _;
      })().catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'E_FORBIDDEN', status: 403 });
      const msg = (err as Error).message;
      expect(msg).toMatch(
        /^school A1001, assessment_results: GET \/v1\.0\/schools\/A1001\/assessment\/results\?.* → 403 Forbidden .*lacks the scope for this endpoint at this school/,
      );
      expect(msg).toContain('(the access token lacks the scope for assessment results)');
      expect(msg).not.toContain(sb.tokens.limited);
      expect(msg).not.toContain('\n');
      expect(sb.control.requests()).toHaveLength(1);
    } finally {
      await c.close();
    }
  });
});
