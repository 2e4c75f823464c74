import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../src/errors.ts';
import { busyMeter, createEncoding, defaultWorkers, SMALL_PAGE_BYTES, type Encoding } from '../../src/encode/pool.ts';
import { FORMATS } from '../../src/format/index.ts';
import type { PageResult } from '../../src/encode/page-work.ts';
import type { TaskSetup } from '../../src/encode/protocol.ts';
import { resourceByName } from '../../src/resources/index.ts';
import { CTX, FIXTURES } from '../flatten/fixtures.ts';

const pools: Encoding[] = [];
afterAll(async () => {
  await Promise.all(pools.map((p) => p.close()));
});
/** A pool whose main thread reads as `busy` (default: always the bottleneck, so threads take every page, small ones too). */
const encoding = (workers: number, maxPagesInFlight?: number, busy: () => number | undefined = () => 1, smallPageBytes = 0) => {
  const e = createEncoding({ workers, maxPagesInFlight, busy, smallPageBytes });
  pools.push(e);
  return e;
};

const setup = (format: TaskSetup['format'], schoolId = CTX.schoolId): TaskSetup => ({
  spec: resourceByName('achievements')!,
  format,
  formatOptions: {},
  ctx: { ...CTX, schoolId },
  keyField: 'id',
});

/** A page as the service sends it: gzip JSON with data and meta. */
function body(records: unknown[], next: string | null = null): Buffer {
  return gzipSync(JSON.stringify({ data: records, meta: { pagination: { next, more: next !== null } } }));
}

function pageRecords(p: number): unknown[] {
  return (FIXTURES.achievements as Record<string, unknown>[]).map((r, i) => ({ ...r, id: `A${p}${i}` }));
}

/** What a result carries, comparable across threads: each table's bytes and row ends. */
function flat(r: PageResult) {
  return {
    records: r.records,
    keys: r.keys,
    tables: r.tables.map((t) => ({
      table: t.table,
      rows: t.chunk.rows,
      bytes:
        t.chunk.kind === 'text'
          ? Buffer.from(t.chunk.bytes).toString('base64')
          : t.chunk.columns.map((c) => Buffer.from(c.data).toString('base64') + Buffer.from(c.defs).toString('base64')),
    })),
  };
}

async function run(e: Encoding, format: TaskSetup['format'], tasks: number, pages: number) {
  const out: { results: ReturnType<typeof flat>[]; drift: Record<string, string[]>; next: (string | null)[] }[] = [];
  await Promise.all(
    Array.from({ length: tasks }, async (_, t) => {
      const task = e.openTask(setup(format, `A${t}`));
      const handles = [];
      for (let p = 0; p < pages; p++) handles.push(await task.submit(body(pageRecords(p), p + 1 < pages ? `next-${p + 1}` : null), true));
      const next = await Promise.all(handles.map(async (h) => ((await h.parsed).meta?.pagination as { next: string | null }).next));
      const results = (await Promise.all(handles.map((h) => h.result))).map(flat);
      const drift = Object.fromEntries([...(await task.close())].map(([k, v]) => [k, [...v].sort()]));
      out[t] = { results, drift, next };
    }),
  );
  return out;
}

describe('encoding pool', () => {
  it.each(['ndjson', 'csv', 'parquet'] as const)(
    '%s: worker threads answer what the main thread does, in order per task',
    async (format) => {
      const inThread = await run(encoding(0), format, 3, 4);
      const pooled = await run(encoding(2, 3), format, 3, 4);
      expect(pooled).toEqual(inThread);
      // this thread busy only from the fifth page on: early pages here, later ones in threads, same bytes
      let calls = 0;
      const mixed = encoding(2, 3, () => (++calls > 4 ? 1 : 0.1));
      expect(await run(mixed, format, 3, 4)).toEqual(inThread);
      expect(mixed.started).toBe(2);
      expect(inThread[0]!.next).toEqual(['next-1', 'next-2', 'next-3', null]);
      expect(inThread[0]!.results[0]!.keys).toEqual(pageRecords(0).map((r) => (r as { id: string }).id));
      expect(inThread[0]!.drift.achievements!.length).toBeGreaterThan(0);
    },
  );

  it.each([0, 1])('a truncated body is the retriable decode error, a wrong one is fatal (workers: %i)', async (workers) => {
    const e = encoding(workers);
    const task = e.openTask(setup('ndjson'));
    const whole = body(pageRecords(0));
    const cut = await task.submit(whole.subarray(0, whole.length - 20), true);
    await expect(cut.parsed).rejects.toBeInstanceOf(ApiError);
    await expect(cut.result).rejects.toMatchObject({ code: 'E_PROTOCOL', retryable: true });
    const wrong = await task.submit(gzipSync('{"data": 5}'), true);
    await expect(wrong.result).rejects.toMatchObject({ code: 'E_PROTOCOL', retryable: false });
    const fine = await task.submit(body(pageRecords(1)), true);
    expect((await fine.result).records).toBe(pageRecords(1).length);
    await task.close();
  });

  it('bounds the pages in flight: submit waits for a slot', async () => {
    const e = encoding(1, 1);
    const task = e.openTask(setup('ndjson'));
    expect(e.started).toBe(0);
    const first = await task.submit(body(pageRecords(0)), true);
    expect(e.started).toBe(1);
    let admitted = false;
    const second = task.submit(body(pageRecords(1)), true).then((h) => {
      admitted = true;
      return h;
    });
    await first.parsed; // parsed, but its rows not yet answered: the slot is still taken
    expect(admitted).toBe(false);
    await first.result;
    const h = await second;
    expect(admitted).toBe(true);
    expect((await h.result).records).toBe(pageRecords(1).length);
    await task.close();
  });

  it('starts no thread while this thread has time to spare, and starts them once it is the bottleneck', async () => {
    let share: number | undefined;
    const e = encoding(2, undefined, () => share);
    const idle = await run(e, 'csv', 3, 3); // no window measured yet, then a quiet one
    share = 0.5;
    expect(await run(e, 'csv', 2, 2)).toEqual(await run(encoding(0), 'csv', 2, 2));
    expect(e.started).toBe(0);
    expect(idle).toEqual(await run(encoding(0), 'csv', 3, 3));
    share = 0.8; // over the default 0.75: pages go to threads from now on, even if this thread calms down
    await run(e, 'csv', 1, 2);
    expect(e.started).toBe(1);
    share = 0.1;
    await run(e, 'csv', 2, 2);
    expect(e.started).toBe(2);
  });

  it('a busy thread keeps small pages: a night of empty pages starts no thread; a task moves to a worker at its first large page', async () => {
    expect(body([]).length).toBeLessThan(SMALL_PAGE_BYTES);
    const night = createEncoding({ workers: 2, busy: () => 1 });
    pools.push(night);
    for (let t = 0; t < 5; t++) {
      const task = night.openTask(setup('parquet', `A${t}`));
      expect((await (await task.submit(body([]), true)).result).records).toBe(0);
      await task.close();
    }
    expect(night.started).toBe(0);

    // one record, then a full page, then one record: here, then a worker for the rest of the task
    const pages = [body(pageRecords(0).slice(0, 1), 'n1'), body(pageRecords(1), 'n2'), body(pageRecords(2).slice(0, 1))];
    const through = async (e: Encoding) => {
      const task = e.openTask(setup('parquet'));
      const handles = [];
      for (const b of pages) handles.push(await task.submit(Buffer.from(b), true));
      const results = (await Promise.all(handles.map((h) => h.result))).map(flat);
      return { results, drift: Object.fromEntries([...(await task.close())].map(([k, v]) => [k, [...v].sort()])) };
    };
    const mixed = createEncoding({ workers: 2, busy: () => 1, smallPageBytes: pages[1]!.length });
    pools.push(mixed);
    expect(await through(mixed)).toEqual(await through(encoding(0)));
    expect(mixed.started).toBe(1);
  });

  it('measures this thread as the bottleneck only while page work keeps it busy', () => {
    const meter = busyMeter(0);
    meter(0);
    const spin = (ms: number) => {
      const until = performance.now() + ms;
      let x = 0;
      while (performance.now() < until) x += Math.sqrt(x + 1);
      return x;
    };
    const t0 = performance.now();
    expect(spin(30)).toBeGreaterThan(0);
    const work = performance.now() - t0;
    expect(meter(work)).toBeGreaterThan(0.8); // all of it page work
    expect(spin(30)).toBeGreaterThan(0);
    expect(meter(work)).toBeLessThan(0.2); // busy, but not with pages
  });

  it('replaces a worker that died: its tasks fail with E_INTERNAL, later tasks run on a new thread', async () => {
    const e = encoding(1);
    const doomed = e.openTask(setup('ndjson'));
    await (
      await doomed.submit(body(pageRecords(1)), true)
    ).result; // binds the worker
    expect(e.started).toBe(1);
    const pool = (e as unknown as { pool: { worker: { terminate(): Promise<number> } }[] }).pool;
    await pool[0]!.worker.terminate();
    await expect(doomed.submit(body(pageRecords(2)), true)).rejects.toMatchObject({ code: 'E_INTERNAL' });
    await doomed.close().catch(() => undefined);
    const [later] = await run(e, 'ndjson', 1, 3);
    expect(later).toEqual((await run(encoding(0), 'ndjson', 1, 3))[0]);
    expect(e.started).toBe(2);
  });
});

describe('the default number of worker threads', () => {
  it('one per CPU beside the main thread, and none where that is fewer than the format gains with', () => {
    const by = (cpus: number) => Object.fromEntries(FORMATS.map((f) => [f.name, defaultWorkers(f.workersToGain, cpus)]));
    // on 2 CPUs one worker made NDJSON and CSV slower than the main thread alone (bench row 2c)
    expect(by(1)).toEqual({ ndjson: 0, csv: 0, parquet: 1 });
    expect(by(2)).toEqual({ ndjson: 0, csv: 0, parquet: 1 });
    expect(by(3)).toEqual({ ndjson: 2, csv: 2, parquet: 2 });
    expect(by(8)).toEqual({ ndjson: 7, csv: 7, parquet: 7 });
  });
});

describe('parsePage', () => {
  it('reads gzip bodies whatever their trailer says: one member, several, a trailer too small or too large', async () => {
    const { parsePage } = await import('../../src/encode/page-work.ts');
    const json = JSON.stringify({ data: pageRecords(1), meta: { pagination: { next: null, more: false } } });
    const whole = gzipSync(json);
    const half = json.length >> 1;
    // two members: the trailer gives the second's size only
    const members = Buffer.concat([gzipSync(json.slice(0, half)), gzipSync(json.slice(half))]);
    const lying = (size: number) => {
      const b = Buffer.from(whole);
      b.writeUInt32LE(size, b.length - 4);
      return b;
    };
    for (const body of [whole, members]) {
      const p = parsePage(body, true);
      expect(p.bytes).toBe(Buffer.byteLength(json));
      expect(p.rows).toEqual(JSON.parse(json).data);
    }
    // zlib checks the trailer's size as it ends the member: a wrong one is a corrupt body, as on the streamed path
    for (const size of [1, 2 ** 32 - 1]) expect(() => parsePage(lying(size), true)).toThrow(ApiError);
  });
});
