import { describe, expect, it } from 'vitest';
import { gzipSync } from 'node:zlib';
import { Readable } from 'node:stream';
import { decodeBuffered, decodePage, decodeStreamed, type DecodedBatch, type DecodeOptions } from '../../src/decode/index.ts';
import { ApiError } from '../../src/errors.ts';
import { decompressed, decodeStreamedBytes } from '../../src/decode/streamed.ts';

function row(i: number) {
  return {
    id: `A${i}`,
    mis_id: String(1000 + i),
    type: i % 3 === 0 ? null : 'Merit',
    points: i,
    ratio: i / 7,
    big: 1e21 + i,
    neg: -0.5e-3,
    comment: `line "${i}"\n\u00e9\u4e2d\ud83d\ude00 \\ end`.repeat(1 + (i % 3)),
    parents_notified: i % 2 === 0,
    created_at: { date: '2024-03-31 00:30:00.000000', timezone_type: 3, timezone: 'Europe/London' },
    nested: { list: [1, 'two', null, { deep: [true, false] }], empty: {}, emptyList: [] },
  };
}

function page(n: number, metaFirst = false) {
  const data = Array.from({ length: n }, (_, i) => row(i));
  const meta = { pagination: { next: 'http://x/next', more: true, per_page: '1000', current_page: 1 }, includes: ['students'] };
  return Buffer.from(JSON.stringify(metaFirst ? { meta, data } : { data, meta }));
}

async function collect(gen: AsyncIterable<DecodedBatch>) {
  const batches: DecodedBatch[] = [];
  for await (const b of gen) batches.push(b);
  return batches;
}

/** A stream in small odd-sized pieces, so tokens and UTF-8 sequences straddle chunk boundaries. */
function trickle(buf: Buffer, size = 997): Readable {
  const parts: Buffer[] = [];
  for (let i = 0; i < buf.length; i += size) parts.push(buf.subarray(i, i + size));
  return Readable.from(parts, { objectMode: false });
}

describe('two decode paths', () => {
  for (const gzip of [false, true]) {
    it(`give identical rows and meta on the same bytes (gzip=${gzip})`, async () => {
      const plain = page(2500);
      const bytes = gzip ? gzipSync(plain) : plain;
      const opts: DecodeOptions = { gzip, batchSize: 500 };
      const fast = await decodeBuffered(trickle(bytes), opts);
      const streamed = await collect(decodeStreamed(trickle(bytes), opts));
      expect(streamed.length).toBeGreaterThan(2);
      expect(streamed.slice(0, -1).every((b) => !b.last && b.bytes === 0 && b.meta === undefined)).toBe(true);
      const lastBatch = streamed[streamed.length - 1];
      expect(lastBatch.last).toBe(true);
      expect(streamed.flatMap((b) => b.rows)).toEqual(fast.rows);
      expect(fast.rows).toEqual(JSON.parse(plain.toString()).data);
      expect(lastBatch.meta).toEqual(fast.meta);
      expect(lastBatch.bytes).toBe(plain.length);
      expect(fast.bytes).toBe(plain.length);
    });
  }

  it('collects meta that comes before data', async () => {
    const bytes = page(30, true);
    const streamed = await collect(decodeStreamed(trickle(bytes, 50), { batchSize: 7 }));
    const fast = await decodeBuffered(bytes, {});
    expect(streamed.flatMap((b) => b.rows)).toEqual(fast.rows);
    expect(streamed.at(-1)!.meta).toEqual({ pagination: expect.objectContaining({ more: true }), includes: ['students'] });
  });

  it('treat {data: {...}} as one row and a body without meta as meta undefined', async () => {
    const bytes = Buffer.from(JSON.stringify({ data: { online: true, approved: false } }));
    const fast = await decodeBuffered(bytes);
    const streamed = await collect(decodeStreamed(bytes));
    expect(fast.rows).toEqual([{ online: true, approved: false }]);
    expect(streamed.flatMap((b) => b.rows)).toEqual(fast.rows);
    expect(fast.meta).toBeUndefined();
    expect(streamed.at(-1)!.meta).toBeUndefined();
  });
});

describe('decodePage picks a path', () => {
  it('buffers a small page into one batch', async () => {
    const bytes = page(50);
    const batches = await collect(decodePage(trickle(bytes), { streamThresholdBytes: bytes.length + 1 }));
    expect(batches).toHaveLength(1);
    expect(batches[0].last).toBe(true);
    expect(batches[0].rows).toHaveLength(50);
  });

  it('streams when Content-Length exceeds the threshold', async () => {
    const bytes = gzipSync(page(3000));
    const batches = await collect(
      decodePage(trickle(bytes, 4096), { gzip: true, contentLength: bytes.length, streamThresholdBytes: 1024, batchSize: 1000 }),
    );
    expect(batches.length).toBeGreaterThan(1);
    expect(batches.flatMap((b) => b.rows)).toEqual(JSON.parse(page(3000).toString()).data);
  });

  it('switches to streaming mid-body without losing the bytes already read (no Content-Length)', async () => {
    for (const gzip of [false, true]) {
      const plain = page(3000);
      const bytes = gzip ? gzipSync(plain) : plain;
      const batches = await collect(decodePage(trickle(bytes, 8191), { gzip, streamThresholdBytes: 100_000, batchSize: 1000 }));
      expect(batches.length).toBeGreaterThan(1);
      expect(batches.flatMap((b) => b.rows)).toEqual(JSON.parse(plain.toString()).data);
      expect(batches.at(-1)!.bytes).toBe(plain.length);
    }
  });
});

describe('gzip pages of one member or several', () => {
  // two gzip members: a valid body, whose trailer gives only the last member's size
  const twoMembers = (plain: Buffer) => {
    const cut = Math.floor(plain.length * 0.9);
    return Buffer.concat([gzipSync(plain.subarray(0, cut)), gzipSync(plain.subarray(cut))]);
  };

  it('gives one batch when the page is within the threshold', async () => {
    const plain = page(300);
    for (const bytes of [gzipSync(plain), twoMembers(plain)]) {
      const batches = await collect(decodePage(trickle(bytes, 1500), { gzip: true, streamThresholdBytes: plain.length + 1 }));
      expect(batches).toHaveLength(1);
      expect(batches[0]!.rows).toEqual(JSON.parse(plain.toString()).data);
      expect(batches[0]!.bytes).toBe(plain.length);
    }
  });

  it('streams a page larger than the threshold once decompressed', async () => {
    const plain = page(3000);
    for (const bytes of [gzipSync(plain), twoMembers(plain)]) {
      const batches = await collect(
        decodePage(trickle(bytes, 8191), { gzip: true, streamThresholdBytes: plain.length - 1, batchSize: 1000 }),
      );
      expect(batches.length).toBeGreaterThan(1);
      expect(batches.flatMap((b) => b.rows)).toEqual(JSON.parse(plain.toString()).data);
      expect(batches.at(-1)!.bytes).toBe(plain.length);
    }
  });
});

describe('broken bodies', () => {
  const cut = (b: Buffer) => b.subarray(0, Math.floor(b.length * 0.6));

  async function failure(p: Promise<unknown>): Promise<ApiError> {
    const e = await p.then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(e).toBeInstanceOf(ApiError);
    return e as ApiError;
  }

  it('JSON that ends early is retriable on both paths', async () => {
    const bytes = cut(page(200));
    expect((await failure(decodeBuffered(bytes))).retriable).toBe(true);
    expect((await failure(collect(decodeStreamed(trickle(bytes))))).retriable).toBe(true);
  });

  it('truncated gzip is retriable on both paths', async () => {
    const bytes = cut(gzipSync(page(200)));
    expect((await failure(decodeBuffered(bytes, { gzip: true }))).retriable).toBe(true);
    expect((await failure(collect(decodeStreamed(trickle(bytes), { gzip: true })))).retriable).toBe(true);
    expect((await failure(collect(decodePage(trickle(bytes), { gzip: true })))).retriable).toBe(true);
  });

  it('a truncated gzip body held in memory fails the page once: no uncaught exception follows', async () => {
    // decompressed before the incremental parser is loaded, its error once found no listener
    const bytes = gzipSync(page(200)).subarray(0, -12);
    expect((await failure(collect(decodeStreamed(bytes, { gzip: true })))).retriable).toBe(true);
    // a body small enough to be decompressed to its end before it is iterated
    const source = decompressed(gzipSync(page(2)).subarray(0, -12), true);
    // turns of the event loop (each polls the thread pool's results) until zlib has failed it
    for (let i = 0; i < 10_000 && !source.errored; i++) await new Promise((r) => setImmediate(r));
    expect(source.errored).toBeTruthy();
    expect((await failure(collect(decodeStreamedBytes(source)))).retriable).toBe(true);
  });

  it('JSON that is wrong is fatal E_PROTOCOL on both paths', async () => {
    for (const text of ['{"data": [1, 2,, 3]}', '<html>oops</html>', '{"items": []}', '[1,2]']) {
      const bytes = Buffer.from(text);
      const a = await failure(decodeBuffered(bytes));
      const b = await failure(collect(decodeStreamed(bytes)));
      expect([a.code, a.retriable, b.code, b.retriable]).toEqual(['E_PROTOCOL', false, 'E_PROTOCOL', false]);
    }
  });
});
