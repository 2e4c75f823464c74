/**
 * Where the time goes, stage by stage, in one process over the exact bytes a warm export
 * received (a replay-front dump): gunzip + JSON.parse, then + flatten, then + each format's
 * writer into a discarding stream. No HTTP, no disk, no pipeline: what is left of an end-to-end
 * figure after these is transport, files, checksums and scheduling. Best of `repeat` each.
 * Usage: node bin/run-ts.js bench/stages.ts '{"dump": PATH, "repeat": 2, "maxPages": 50}'  → one JSON line: StageResult
 */
import { readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import { compileFlattener } from '../src/flatten/index.ts';
import { formatByName, type FormatOptions } from '../src/format/index.ts';
import { compileResource } from '../src/encode/page-encoder.ts';
import { resourceByName } from '../src/resources/index.ts';
import { readDump } from './replay-front.ts';
import { bestOf } from './best-of.ts';

export interface StageResult {
  rows: number;
  parseMs: number;
  flattenMs: number;
  /** reference path: flatten -> writer.write(rows) */
  formatMs: Record<'ndjson' | 'csv' | 'parquet', number>;
  /** the same with --parquet-writer parquetjs-lite */
  parquetLiteMs?: number;
  /** generated serialisers + per-task memo -> writer.writeEncoded(chunk), one thread */
  encodedMs?: Record<'ndjson' | 'csv' | 'parquet', number>;
}

const args = JSON.parse(process.argv[2] ?? '{}') as { dump: string; repeat?: number; maxPages?: number };
// achievements pages only (not discovery), and at most maxPages of them: the cost per row is what matters
const pages = readDump(readFileSync(args.dump))
  .filter((p) => gunzipSync(p).includes('"students"'))
  .slice(0, args.maxPages ?? Infinity);
const repeat = args.repeat ?? 2;
const spec = resourceByName('achievements')!;
const ctx = { schoolId: 'A1001', region: 'uk', runId: '20260101T000000Z-bench', extractedAt: new Date().toISOString() };

const best = (fn: () => Promise<number> | number) => bestOf(repeat, fn);

const parse = (p: Buffer): unknown[] => (JSON.parse(gunzipSync(p).toString('utf8')) as { data: unknown[] }).data;

const parsed = await best(async () => pages.reduce((n, p) => n + parse(p).length, 0));
const flattened = await best(async () => {
  const f = compileFlattener(spec);
  let n = 0;
  for (const p of pages) n += f.flattenBatch(parse(p), ctx).get('achievements')!.length;
  return n;
});

const discard = () => new Writable({ write: (_c, _e, cb) => cb() });

/** The reference path: flatten, then each table's writer takes rows. */
async function viaRows(name: 'ndjson' | 'csv' | 'parquet', opts: FormatOptions) {
  const format = formatByName(name);
  return best(async () => {
    const f = compileFlattener(spec);
    const writers = new Map(f.tables.map((t) => [t.name, format.open(t, discard(), opts)]));
    let n = 0;
    for (const p of pages) {
      for (const [table, rows] of f.flattenBatch(parse(p), ctx)) {
        if (rows.length) await writers.get(table)!.write(rows);
        if (table === 'achievements') n += rows.length;
      }
    }
    for (const w of writers.values()) await w.finish();
    return n;
  });
}

/** The fast path: generated serialisers and the per-task memo, then writers take encoded rows. */
async function viaEncoder(name: 'ndjson' | 'csv' | 'parquet') {
  const format = formatByName(name);
  const compiled = compileResource(spec, name, {});
  return best(async () => {
    const enc = compiled.forTask(ctx);
    const writers = new Map(enc.flattener.tables.map((t) => [t.name, format.open(t, discard(), {})]));
    let n = 0;
    for (const p of pages) {
      const page = enc.encode(parse(p));
      for (const { table, chunk } of page.tables) await writers.get(table)!.writeEncoded!(chunk);
      n += page.records;
    }
    for (const w of writers.values()) await w.finish();
    return n;
  });
}

const formatMs = {} as StageResult['formatMs'];
const encodedMs = {} as NonNullable<StageResult['encodedMs']>;
for (const name of ['ndjson', 'csv', 'parquet'] as const) {
  formatMs[name] = (await viaRows(name, {})).ms;
  encodedMs[name] = (await viaEncoder(name)).ms;
}
const parquetLiteMs = (await viaRows('parquet', { parquetWriter: 'parquetjs-lite' })).ms;
const result: StageResult = { rows: parsed.rows, parseMs: parsed.ms, flattenMs: flattened.ms, formatMs, parquetLiteMs, encodedMs };
process.stdout.write(JSON.stringify(result) + '\n');
