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
import { formatByName } from '../src/format/index.ts';
import { resourceByName } from '../src/resources/index.ts';
import { readDump } from './replay-front.ts';
import { bestOf } from './best-of.ts';

export interface StageResult {
  rows: number;
  parseMs: number;
  flattenMs: number;
  formatMs: Record<'ndjson' | 'csv' | 'parquet', number>;
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

const formatMs = {} as StageResult['formatMs'];
for (const name of ['ndjson', 'csv', 'parquet'] as const) {
  const format = formatByName(name);
  const r = await best(async () => {
    const f = compileFlattener(spec);
    const writers = new Map(f.tables.map((t) => [t.name, format.open(t, new Writable({ write: (_c, _e, cb) => cb() }), {})]));
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
  formatMs[name] = r.ms;
}
const result: StageResult = { rows: parsed.rows, parseMs: parsed.ms, flattenMs: flattened.ms, formatMs };
process.stdout.write(JSON.stringify(result) + '\n');
