/**
 * One format's page work alone over a replay dump (discarding stream), for profiling the share of
 * garbage collection and the hot functions: the fast path (generated serialisers + memo +
 * writer.writeEncoded), or with PATH=reference the reference path (flatten + writer.write).
 *   node --cpu-prof bin/run-ts.js bench/encode-profile.ts DUMP FORMAT [PAGES] [fast|reference]
 */
import { compileFlattener } from '../src/flatten/index.ts';
import { readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import { compileResource } from '../src/encode/page-encoder.ts';
import { formatByName } from '../src/format/index.ts';
import { resourceByName } from '../src/resources/index.ts';
import { readDump } from './replay-front.ts';

const [dump, name = 'ndjson', max = '50', path = 'fast'] = process.argv.slice(2) as [string, 'ndjson' | 'csv' | 'parquet', string, string];
const pages = readDump(readFileSync(dump))
  .filter((p) => gunzipSync(p).includes('"students"'))
  .slice(0, Number(max));
const spec = resourceByName('achievements')!;
const ctx = { schoolId: 'A1001', region: 'uk', runId: '20260101T000000Z-bench', extractedAt: new Date().toISOString() };
const compiled = compileResource(spec, name, {});
for (let round = 0; round < 2; round++) {
  const t0 = performance.now();
  const enc = compiled.forTask(ctx);
  const flattener = compileFlattener(spec);
  const writers = new Map(
    enc.flattener.tables.map((t) => [t.name, formatByName(name).open(t, new Writable({ write: (_c, _e, cb) => cb() }), {})]),
  );
  let parseMs = 0;
  for (const p of pages) {
    const t = performance.now();
    const records = (JSON.parse(gunzipSync(p).toString('utf8')) as { data: unknown[] }).data;
    parseMs += performance.now() - t;
    if (path === 'reference') {
      for (const [table, rows] of flattener.flattenBatch(records, ctx)) if (rows.length) await writers.get(table)!.write(rows);
    } else for (const { table, chunk } of enc.encode(records).tables) await writers.get(table)!.writeEncoded!(chunk);
  }
  for (const w of writers.values()) await w.finish();
  process.stdout.write(`${name} ${path}: ${(performance.now() - t0).toFixed(0)} ms (parse ${parseMs.toFixed(0)} ms)\n`);
}
