/**
 * The page work of an export without HTTP or disk, through the encoding pool: raw gzip pages of a
 * replay dump are submitted to `workers` worker threads (0: the main thread) as 4 concurrent
 * tasks, and the encoded rows are written by each table's writer into a discarding stream on the
 * main thread, as the pipeline does. Best of `repeat`, per format and worker count.
 * Usage: node bin/run-ts.js bench/pool-stage.ts '{"dump": PATH, "repeat": 2, "maxPages": 50, "workers": [0, 1, 2]}'
 *   → one JSON line: PoolStageResult
 */
import { readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import { createEncoding, type Encoding } from '../src/encode/pool.ts';
import { compileFlattener } from '../src/flatten/index.ts';
import { formatByName } from '../src/format/index.ts';
import { resourceByName } from '../src/resources/index.ts';
import { readDump } from './replay-front.ts';
import { bestOf } from './best-of.ts';

type F = 'ndjson' | 'csv' | 'parquet';
export interface PoolStageResult {
  rows: number;
  /** ms per format per worker count */
  ms: Record<F, Record<string, number>>;
}

const args = JSON.parse(process.argv[2] ?? '{}') as {
  dump: string;
  repeat?: number;
  maxPages?: number;
  workers?: number[];
  tasks?: number;
};
const pages = readDump(readFileSync(args.dump))
  .filter((p) => gunzipSync(p).includes('"students"'))
  .slice(0, args.maxPages ?? Infinity);
const spec = resourceByName('achievements')!;
const tables = compileFlattener(spec).tables;
const TASKS = args.tasks ?? 4;
const discard = () => new Writable({ write: (_c, _e, cb) => cb() });

async function once(enc: Encoding, format: F): Promise<number> {
  {
    let rows = 0;
    await Promise.all(
      Array.from({ length: TASKS }, async (_, t) => {
        const ctx = { schoolId: `A${1001 + t}`, region: 'uk', runId: '20260101T000000Z-bench', extractedAt: new Date().toISOString() };
        const task = enc.openTask({ spec, format, formatOptions: {}, ctx, keyField: 'id' });
        const writers = new Map(tables.map((s) => [s.name, formatByName(format).open(s, discard(), {})]));
        // one page ahead, as the pipeline's cursor walk: submit the next while this one is written
        let ahead = pages[t] ? await task.submit(Buffer.from(pages[t]), true) : undefined;
        for (let i = t; i < pages.length; i += TASKS) {
          const h = ahead!;
          await h.parsed;
          ahead = i + TASKS < pages.length ? await task.submit(Buffer.from(pages[i + TASKS]!), true) : undefined;
          const r = await h.result;
          for (const { table, chunk } of r.tables) await writers.get(table)!.writeEncoded!(chunk);
          rows += r.records;
        }
        await task.close();
        for (const w of writers.values()) await w.finish();
      }),
    );
    return rows;
  }
}

const ms = { ndjson: {}, csv: {}, parquet: {} } as PoolStageResult['ms'];
let rows = 0;
for (const w of args.workers ?? [0, 1, 2]) {
  // threads started (and their code loaded) before timing, once per worker count as a run starts
  // its pool once; threads take every page from the start (this measures what they can do, not
  // when they start)
  const enc = createEncoding({ workers: w, busy: () => 1, smallPageBytes: 0 });
  try {
    for (const format of ['ndjson', 'csv', 'parquet'] as const) {
      // one warm-up task per format before timing (it reaches one of the threads; the others compile
      // the format's encoder in the first timed round, as the version before did)
      const warm = enc.openTask({
        spec,
        format,
        formatOptions: {},
        ctx: { schoolId: 'A1', region: 'uk', runId: 'R', extractedAt: '2026-01-01T00:00:00Z' },
      });
      await (
        await warm.submit(Buffer.from(pages[0]!), true)
      ).result;
      await warm.close();
      const r = await bestOf(args.repeat ?? 2, () => once(enc, format));
      ms[format][String(w)] = r.ms;
      rows = r.rows;
    }
  } finally {
    await enc.close();
  }
}
process.stdout.write(JSON.stringify({ rows, ms } satisfies PoolStageResult) + '\n');
