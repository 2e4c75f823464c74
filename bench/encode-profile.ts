/**
 * One format's fast path alone (generated serialisers + memo + writer.writeEncoded, discarding
 * stream) over a replay dump, for profiling: node --cpu-prof bin/run-ts.js bench/encode-profile.ts DUMP FORMAT [PAGES]
 */
import { readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import { compileResource } from '../src/encode/page-encoder.ts';
import { formatByName } from '../src/format/index.ts';
import { resourceByName } from '../src/resources/index.ts';
import { readDump } from './replay-front.ts';

const [dump, name = 'ndjson', max = '50'] = process.argv.slice(2) as [string, 'ndjson' | 'csv' | 'parquet', string];
const pages = readDump(readFileSync(dump))
  .filter((p) => gunzipSync(p).includes('"students"'))
  .slice(0, Number(max));
const spec = resourceByName('achievements')!;
const ctx = { schoolId: 'A1001', region: 'uk', runId: '20260101T000000Z-bench', extractedAt: new Date().toISOString() };
const compiled = compileResource(spec, name, {});
for (let round = 0; round < 2; round++) {
  const t0 = performance.now();
  const enc = compiled.forTask(ctx);
  const writers = new Map(
    enc.flattener.tables.map((t) => [t.name, formatByName(name).open(t, new Writable({ write: (_c, _e, cb) => cb() }), {})]),
  );
  let parseMs = 0;
  for (const p of pages) {
    const t = performance.now();
    const records = (JSON.parse(gunzipSync(p).toString('utf8')) as { data: unknown[] }).data;
    parseMs += performance.now() - t;
    for (const { table, chunk } of enc.encode(records).tables) await writers.get(table)!.writeEncoded!(chunk);
  }
  for (const w of writers.values()) await w.finish();
  process.stdout.write(`${name}: ${(performance.now() - t0).toFixed(0)} ms (parse ${parseMs.toFixed(0)} ms)\n`);
}
