/**
 * CPU-only measurements over the exact gzip bodies a warm export received (a replay-front dump),
 * in their own process: the ceiling (gunzip + JSON.parse per page) and the two decode paths of
 * src/decode on the same bytes. Best of `repeat` each. Prints one JSON line: CeilingResult.
 * Usage: node bin/run-ts.js bench/ceiling-child.ts '{"dump": PATH, "repeat": 3}'
 */
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { decodeBuffered, decodeStreamed } from '../src/decode/index.ts';
import { readDump } from './replay-front.ts';
import { bestOf } from './best-of.ts';

export interface CeilingResult {
  pages: number;
  gzipBytes: number;
  rawBytes: number;
  rows: number;
  ceilingMs: number;
  bufferedMs: number;
  streamedMs: number;
}

const args = JSON.parse(process.argv[2] ?? '{}') as { dump: string; repeat?: number };
const pages = readDump(readFileSync(args.dump));
const repeat = args.repeat ?? 3;

const best = (fn: () => Promise<number> | number) => bestOf(repeat, fn);

const rowsOf = (body: unknown): number => {
  const d = (body as { data?: unknown }).data;
  return Array.isArray(d) ? d.length : 1;
};

// Ceiling: the least any JavaScript decoder has to do with these bytes.
const ceiling = await best(() => {
  let rows = 0;
  for (const p of pages) rows += rowsOf(JSON.parse(gunzipSync(p).toString('utf8')));
  return rows;
});
const buffered = await best(async () => {
  let rows = 0;
  for (const p of pages) rows += (await decodeBuffered(p, { gzip: true })).rows.length;
  return rows;
});
const streamed = await best(async () => {
  let rows = 0;
  for (const p of pages) for await (const b of decodeStreamed(p, { gzip: true })) rows += b.rows.length;
  return rows;
});
if (buffered.rows !== ceiling.rows || streamed.rows !== ceiling.rows) {
  throw new Error(`decode paths disagree: ceiling ${ceiling.rows}, buffered ${buffered.rows}, streamed ${streamed.rows} rows`);
}
let rawBytes = 0;
for (const p of pages) rawBytes += gunzipSync(p).length;
const result: CeilingResult = {
  pages: pages.length,
  gzipBytes: pages.reduce((a, p) => a + p.length, 0),
  rawBytes,
  rows: ceiling.rows,
  ceilingMs: ceiling.ms,
  bufferedMs: buffered.ms,
  streamedMs: streamed.ms,
};
process.stdout.write(JSON.stringify(result) + '\n');
