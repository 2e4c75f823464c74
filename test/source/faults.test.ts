import { describe, expect, it } from 'vitest';
import { gzipSync } from 'node:zlib';
import { ApiClient, type ClientEvent, type PageBatch } from '../../src/source/client.ts';
import { all, cutShort, json, rows, startServer, useClientHarness, type TestServer } from './server.ts';

const TOKEN = 'tok-SECRET-789';
const harness = useClientHarness(TOKEN);
const server = harness.server;
function client(url: string, events: ClientEvent[], extra: Partial<ConstructorParameters<typeof ApiClient>[0]> = {}) {
  return harness.client(url, { onEvent: (e) => events.push(e), ...extra });
}
const ids = (bs: PageBatch[]) => bs.flatMap((b) => b.rows.map((r) => (r as { id: string }).id));
const retries = (ev: ClientEvent[]) => ev.filter((e): e is Extract<ClientEvent, { type: 'retry' }> => e.type === 'retry');

/** Two pages of 3 rows; `fault(n)` may answer request n instead. */
function twoPages(s: () => TestServer, fault: (n: number, res: import('node:http').ServerResponse) => boolean) {
  return (req: { url: URL }, res: import('node:http').ServerResponse, n: number) => {
    if (fault(n, res)) return;
    const second = req.url.searchParams.get('cursor') === 'p2';
    json(res, 200, {
      data: rows(second ? 3 : 0, 3),
      meta: { pagination: { next: second ? null : `${s().url}/v1.0/schools?cursor=p2`, more: !second } },
    });
  };
}

describe('retriable statuses recover', () => {
  for (const status of [500, 502, 503, 504, 423, 429]) {
    it(`${status} on a page is retried and every row arrives once`, async () => {
      const ev: ClientEvent[] = [];
      const s: TestServer = await server(
        twoPages(
          () => s,
          (n, res) => (n === 2 || n === 3 ? (json(res, status, { message: 'later' }), true) : false),
        ),
      );
      const b = await all(client(s.url, ev).paginate('/schools', {}));
      expect(ids(b)).toEqual(['A0', 'A1', 'A2', 'A3', 'A4', 'A5']);
      expect(s.requests).toHaveLength(4);
      expect(retries(ev).map((e) => e.attempt)).toEqual([1, 2]);
      expect(retries(ev)[0].reason).toContain(String(status));
      expect(retries(ev).every((e) => e.delayMs >= 0 && e.delayMs <= 5)).toBe(true);
    });
  }
});

describe('Retry-After', () => {
  it('seconds: waits exactly that long before the next attempt', async () => {
    const ev: ClientEvent[] = [];
    const s = await server((_req, res, n) => (n === 1 ? json(res, 429, {}, { 'retry-after': '1' }) : json(res, 200, { data: rows(0, 1) })));
    // an injected clock: the wait is observed, not spent
    const log: string[] = [];
    const clock = {
      now: () => 0,
      sleep: async (ms: number) => void log.push(`sleep ${ms} after ${s.requests.length} request(s)`),
    };
    const c = client(s.url, ev, { retry: { baseDelayMs: 1, maxDelayMs: 5000 }, clock });
    await c.getJson('/schools');
    expect(retries(ev).map((e) => e.delayMs)).toEqual([1000]);
    expect(log).toEqual(['sleep 1000 after 1 request(s)']);
    expect(s.requests).toHaveLength(2);
  });

  it('HTTP date: measured against the server Date header', async () => {
    const ev: ClientEvent[] = [];
    const now = new Date('2026-11-22T01:00:00Z');
    const s = await server((_req, res, n) =>
      n === 1
        ? json(res, 503, {}, { date: now.toUTCString(), 'retry-after': new Date(now.getTime() + 1000).toUTCString() })
        : json(res, 200, { data: rows(0, 1) }),
    );
    const slept: number[] = [];
    const clock = { now: () => 0, sleep: async (ms: number) => void slept.push(ms) };
    await all(client(s.url, ev, { retry: { baseDelayMs: 1, maxDelayMs: 5000 }, clock }).paginate('/schools', {}));
    expect(retries(ev).map((e) => e.delayMs)).toEqual([1000]);
    expect(slept).toEqual([1000]);
  });

  it('is capped at maxDelayMs', async () => {
    const ev: ClientEvent[] = [];
    const s = await server((_req, res, n) => (n === 1 ? json(res, 429, {}, { 'retry-after': '3600' }) : json(res, 200, { data: [] })));
    await client(s.url, ev, { retry: { baseDelayMs: 1, maxDelayMs: 20 } }).getJson('/schools');
    expect(retries(ev).map((e) => e.delayMs)).toEqual([20]);
  });
});

describe('bodies cut short', () => {
  it('connection reset mid-body: the page is fetched again, rows once', async () => {
    const ev: ClientEvent[] = [];
    const page1 = Buffer.from(JSON.stringify({ data: rows(0, 3), meta: { pagination: { next: 'X', more: true } } }));
    const s: TestServer = await server(
      twoPages(
        () => s,
        (n, res) => (n === 1 ? (cutShort(res, page1, 0.5), true) : false),
      ),
    );
    const b = await all(client(s.url, ev).paginate('/schools', {}));
    expect(ids(b)).toEqual(['A0', 'A1', 'A2', 'A3', 'A4', 'A5']);
    expect(s.requests).toHaveLength(3);
    expect(retries(ev)).toHaveLength(1);
  });

  it('truncated gzip body (complete at the HTTP level) is retried', async () => {
    const ev: ClientEvent[] = [];
    const s: TestServer = await server(
      twoPages(
        () => s,
        (n, res) => {
          if (n !== 2) return false;
          const gz = gzipSync(JSON.stringify({ data: rows(3, 3), meta: { pagination: { next: null } } }));
          const cut = gz.subarray(0, gz.length - 12);
          res.writeHead(200, { 'content-encoding': 'gzip', 'content-length': cut.length, 'content-type': 'application/json' });
          res.end(cut);
          return true;
        },
      ),
    );
    const b = await all(client(s.url, ev).paginate('/schools', {}));
    expect(ids(b)).toEqual(['A0', 'A1', 'A2', 'A3', 'A4', 'A5']);
    expect(retries(ev)).toHaveLength(1);
    expect(retries(ev)[0].reason).toMatch(/gzip|ended early/);
  });

  it('JSON that ends early (complete at the HTTP level) is retried', async () => {
    const ev: ClientEvent[] = [];
    const s = await server((_req, res, n) => {
      if (n > 1) return json(res, 200, { data: rows(0, 4) });
      const text = JSON.stringify({ data: rows(0, 4) }).slice(0, 40);
      res.writeHead(200, { 'content-length': Buffer.byteLength(text) });
      res.end(text);
    });
    const b = await all(client(s.url, ev).paginate('/schools', {}));
    expect(ids(b)).toEqual(['A0', 'A1', 'A2', 'A3']);
    expect(retries(ev).map((e) => e.reason)).toEqual([expect.stringMatching(/ended early/)]);
  });

  it('a refused connection is retried, then reported with the last reason', async () => {
    const gone = await startServer(() => undefined);
    await gone.close(); // nothing listens on this port any more
    const ev: ClientEvent[] = [];
    const err = await client(gone.url, ev, { retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 2 } })
      .getJson('/schools', { ctx: { school: 'A3', endpoint: 'schools' } })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'E_HTTP_RETRIES' });
    expect((err as Error).message).toMatch(
      /^school A3, schools: GET \/v1\.0\/schools: gave up after 3 attempts; last: network error ECONNREFUSED/,
    );
    // which host refused: the API URL or one of the regional domains
    expect((err as Error).message).toContain(`network error ECONNREFUSED from ${new URL(gone.url).host}`);
    expect(retries(ev)).toHaveLength(2);
  });

  it('gzip pages are decompressed', async () => {
    const s = await server((_req, res) => {
      const gz = gzipSync(JSON.stringify({ data: rows(0, 50) }));
      res.writeHead(200, { 'content-encoding': 'gzip', 'content-length': gz.length });
      res.end(gz);
    });
    const b = await all(client(s.url, []).paginate('/schools', {}));
    expect(ids(b)).toEqual(rows(0, 50).map((r) => r.id));
    expect(b[0].bytes).toBe(JSON.stringify({ data: rows(0, 50) }).length);
  });

  for (const gzip of [false, true]) {
    it(`a streamed page cut mid-body is retried; rows already emitted are recognised by key (gzip=${gzip})`, async () => {
      const ev: ClientEvent[] = [];
      const plain = Buffer.from(JSON.stringify({ data: rows(0, 6000), meta: { pagination: { next: null, more: false } } }));
      const body = gzip ? gzipSync(plain) : plain;
      const headers: Record<string, string> = gzip ? { 'content-encoding': 'gzip' } : {};
      let sawBatch!: () => void;
      const batchSeen = new Promise<void>((r) => (sawBatch = r));
      const s = await server(async (_req, res, n) => {
        if (n === 1) {
          // the first attempt dies only after the client has emitted rows from it; the retry answers in full
          res.writeHead(200, { 'content-length': body.length, ...headers });
          res.write(body.subarray(0, Math.floor(body.length * 0.7)));
          await batchSeen;
          res.socket?.destroy();
          return;
        }
        res.writeHead(200, { 'content-length': body.length, ...headers });
        res.end(body);
      });
      const c = client(s.url, ev, { streamThresholdBytes: 16 * 1024 });
      const got: PageBatch[] = [];
      let batchesBeforeRetry = -1;
      for await (const b of c.paginate('/schools', { rowKey: (r) => (r as { id: string }).id })) {
        got.push(b);
        sawBatch();
        if (batchesBeforeRetry < 0 && retries(ev).length > 0) batchesBeforeRetry = got.length - 1;
      }
      expect(batchesBeforeRetry).toBeGreaterThan(0); // rows had been emitted before the cut
      expect(ids(got)).toEqual(rows(0, 6000).map((r) => r.id));
      expect(got.at(-1)).toMatchObject({ last: true, final: true, bytes: plain.length });
      expect(got.slice(0, -1).every((b) => !b.last && b.page === 1)).toBe(true);
      expect(s.requests).toHaveLength(2);
    });
  }
});
