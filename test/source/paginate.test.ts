import { describe, expect, it } from 'vitest';
import type { PageBatch } from '../../src/source/client.ts';
import { all, json, rows, useClientHarness } from './server.ts';

const TOKEN = 'tok-SECRET-123';
const { server, client } = useClientHarness(TOKEN);
const ids = (bs: PageBatch[]) => bs.flatMap((b) => b.rows.map((r) => (r as { id: string }).id));

describe('cursor pagination', () => {
  it('sends cursor=true, per_page and include, follows next until more is false, bearer auth', async () => {
    const s = await server((req, res) => {
      const cursor = req.url.searchParams.get('cursor');
      const n = cursor === 'true' ? 0 : Number(cursor!.slice(1));
      const more = n < 2;
      json(
        res,
        200,
        {
          data: rows(n * 3, 3),
          meta: {
            pagination: { next: more ? `${s.url}${req.url.pathname}?cursor=c${n + 1}&per_page=3` : null, more, per_page: 3 },
            includes: ['students'],
          },
        },
        { date: 'Sun, 22 Nov 2026 01:00:0' + n + ' GMT' },
      );
    });
    const c = client(s.url);
    const batches = await all(
      c.paginate('/schools/A1/achievements', {
        perPage: 3,
        include: ['students', 'employees'],
        ctx: { school: 'A1', endpoint: 'achievements' },
      }),
    );
    expect(ids(batches)).toEqual(['A0', 'A1', 'A2', 'A3', 'A4', 'A5', 'A6', 'A7', 'A8']);
    expect(batches.map((b) => [b.page, b.last, b.final])).toEqual([
      [1, true, false],
      [2, true, false],
      [3, true, true],
    ]);
    expect(batches[0].meta?.includes).toEqual(['students']);
    expect(batches[0].bytes).toBeGreaterThan(0);
    expect(batches[2].serverDate?.toISOString()).toBe('2026-11-22T01:00:02.000Z');
    expect(c.serverNow()?.toISOString()).toBe('2026-11-22T01:00:02.000Z');
    const first = s.requests[0];
    expect(first.url.pathname).toBe('/v1.0/schools/A1/achievements');
    expect(Object.fromEntries(first.url.searchParams)).toEqual({ cursor: 'true', per_page: '3', include: 'students,employees' });
    expect(first.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(first.headers['accept-encoding']).toBe('gzip');
    expect(s.requests.map((r) => r.url.searchParams.get('cursor'))).toEqual(['true', 'c1', 'c2']);
  });

  it('basic auth sends base64("<token>:")', async () => {
    const s = await server((_req, res) => json(res, 200, { data: rows(0, 1) }));
    await all(client(s.url, { auth: 'basic' }).paginate('/schools', {}));
    expect(s.requests[0].headers.authorization).toBe(`Basic ${Buffer.from(`${TOKEN}:`).toString('base64')}`);
    expect(Buffer.from(s.requests[0].headers.authorization!.slice(6), 'base64').toString()).toBe(`${TOKEN}:`);
  });

  it('stops at next null even when more is absent, and at more=false even when next is set', async () => {
    for (const pagination of [
      { next: null, per_page: 2 },
      { next: 'http://127.0.0.1:1/never', more: false },
    ]) {
      const s = await server((_req, res) => json(res, 200, { data: rows(0, 2), meta: { pagination } }));
      const b = await all(client(s.url).paginate('/schools', {}));
      expect(b).toHaveLength(1);
      expect(b[0].final).toBe(true);
      expect(s.requests).toHaveLength(1);
    }
  });

  it('a body without a pagination object is a single, final page', async () => {
    const s = await server((_req, res) => json(res, 200, { data: rows(0, 5) }));
    const b = await all(client(s.url).paginate('/schools/A1/deletions', {}));
    expect(ids(b)).toHaveLength(5);
    expect(b[0]).toMatchObject({ page: 1, last: true, final: true });
    expect(b[0].meta).toBeUndefined();
  });

  it('walks every page when the server clamps per_page below what was asked', async () => {
    const total = 23;
    const s = await server((req, res) => {
      const cursor = req.url.searchParams.get('cursor');
      const at = cursor === 'true' ? 0 : Number(cursor);
      const clamp = 5; // asked for 1000
      const end = Math.min(total, at + clamp);
      const more = end < total;
      json(res, 200, {
        data: rows(at, end - at),
        meta: {
          pagination: { next: more ? `${s.url}/v1.0/schools?cursor=${end}&per_page=${clamp}` : null, more, per_page: String(clamp) },
        },
      });
    });
    const b = await all(client(s.url).paginate('/schools', {}));
    expect(s.requests[0].url.searchParams.get('per_page')).toBe('1000');
    expect(ids(b)).toEqual(rows(0, total).map((r) => r.id));
    expect(b.at(-1)!.page).toBe(5);
  });
});

describe('offset pagination', () => {
  it('does not send cursor and follows next links carrying page', async () => {
    const s = await server((req, res) => {
      const p = Number(req.url.searchParams.get('page') ?? '1');
      json(res, 200, {
        data: rows((p - 1) * 2, 2),
        meta: {
          pagination: {
            current_page: p,
            more: p < 3,
            next: p < 3 ? `${s.url}/v1.0/schools?page=${p + 1}&per_page=2` : null,
            previous: null,
            per_page: 2,
          },
        },
      });
    });
    const b = await all(client(s.url).paginate('/schools', { mode: 'offset', perPage: 2 }));
    expect(ids(b)).toEqual(['A0', 'A1', 'A2', 'A3', 'A4', 'A5']);
    expect(s.requests[0].url.searchParams.has('cursor')).toBe(false);
    expect(s.requests.map((r) => r.url.searchParams.get('page'))).toEqual([null, '2', '3']);
  });
});

describe('pagination protocol errors', () => {
  it('a repeated cursor is E_PROTOCOL naming school and endpoint', async () => {
    const s = await server((req, res) => {
      const n = req.url.searchParams.get('cursor') === 'true' ? 0 : 1;
      // the third page hands back the cursor the second one had (a different URL, the same cursor)
      const next = `${s.url}/v1.0/schools/A7/achievements?cursor=abc&per_page=${n === 0 ? 10 : 11}`;
      json(res, 200, { data: rows(n, 1), meta: { pagination: { next, more: true } } });
    });
    const seen: string[] = [];
    const err = await (async () => {
      for await (const b of client(s.url).paginate('/schools/A7/achievements', {
        perPage: 10,
        ctx: { school: 'A7', endpoint: 'achievements' },
      })) {
        seen.push(...b.rows.map((r) => (r as { id: string }).id));
      }
    })().catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'E_PROTOCOL', school: 'A7', endpoint: 'achievements' });
    expect((err as Error).message).toMatch(/school A7, achievements: .*repeated a pagination cursor/);
    expect(s.requests).toHaveLength(2);
    // the page whose link is bad is refused whole: its rows never reach the consumer
    expect(seen).toEqual(['A0']);
  });

  it('a repeated next URL is E_PROTOCOL', async () => {
    const s = await server((req, res) =>
      json(res, 200, { data: rows(0, 1), meta: { pagination: { next: `${s.url}/v1.0/schools?page=2`, more: true } } }),
    );
    const err = await all(client(s.url).paginate('/schools', { mode: 'offset' })).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'E_PROTOCOL' });
    expect((err as Error).message).toMatch(/repeated a next-page URL/);
    expect(s.requests).toHaveLength(2);
  });

  it('refuses a next URL on another origin and sends nothing there', async () => {
    const foreign = await server((_req, res) => json(res, 200, { data: [] }));
    const s = await server((_req, res) =>
      json(res, 200, { data: rows(0, 1), meta: { pagination: { next: `${foreign.url}/v1.0/schools?cursor=x`, more: true } } }),
    );
    const err = await all(client(s.url).paginate('/schools', { ctx: { school: 'A1', endpoint: 'schools' } })).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'E_PROTOCOL' });
    expect((err as Error).message).toMatch(/another origin/);
    expect(foreign.requests).toHaveLength(0);
  });
});

describe('prefetch', () => {
  it('requests the next page while the consumer still holds this one, and no further', async () => {
    let onSecond!: () => void;
    const secondAsked = new Promise<void>((r) => (onSecond = r));
    const s = await server((req, res, n) => {
      const at = Number(req.url.searchParams.get('cursor') === 'true' ? 0 : req.url.searchParams.get('cursor'));
      json(res, 200, {
        data: rows(at, 2),
        meta: { pagination: { next: at < 6 ? `${s.url}/v1.0/schools?cursor=${at + 2}` : null, more: at < 6 } },
      });
      if (n === 2) onSecond();
    });
    const got: string[] = [];
    for await (const b of client(s.url).paginate('/schools', {})) {
      if (b.page === 1) {
        await secondAsked; // would never resolve without the prefetch
        for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
        expect(s.requests).toHaveLength(2);
      }
      got.push(...b.rows.map((r) => (r as { id: string }).id));
    }
    expect(got).toEqual(rows(0, 8).map((r) => r.id));
  });
});

describe('consumer stopping early', () => {
  it('closes cleanly with a page prefetched', async () => {
    const s = await server((req, res) => {
      const n = Number(req.url.searchParams.get('cursor') === 'true' ? 0 : req.url.searchParams.get('cursor'));
      json(res, 200, { data: rows(n, 2), meta: { pagination: { next: `${s.url}/v1.0/schools?cursor=${n + 2}`, more: true } } });
    });
    const c = client(s.url);
    let pages = 0;
    for await (const b of c.paginate('/schools', {})) {
      pages = b.page;
      if (b.page === 2) break;
    }
    expect(pages).toBe(2);
    // at most one page was fetched ahead of the consumer
    expect(s.requests.length).toBeLessThanOrEqual(3);
  });
});
