/**
 * The script a data engineer writes by hand instead of using school-export: walk each school's
 * achievements cursor with fetch, JSON.parse every page, append the raw rows as NDJSON. No
 * flattening, no types, no child tables, no checksums, no durable commits. The benchmark runs it
 * on the same recorded bytes as our exports (the replay front) and reports our wall time
 * relative to it. Same URLs as the exporter (so the front answers from memory), same concurrency.
 * Usage: node bench/raw-dump.mjs '{"apiUrl", "domains", "token", "dest", "concurrency"}' → one JSON line
 */
import { open } from 'node:fs/promises';
import { join } from 'node:path';

const a = JSON.parse(process.argv[2] ?? '{}');
const headers = { authorization: `Bearer ${a.token}`, accept: 'application/json', 'accept-encoding': 'gzip' };

async function* pages(url) {
  while (url) {
    const res = await fetch(url, { headers });
    if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
    const body = JSON.parse(await res.text());
    yield body.data;
    url = body.meta?.pagination?.next ?? null;
  }
}

const t0 = performance.now();
const cpu0 = process.cpuUsage();
const schools = [];
for await (const data of pages(`${a.apiUrl}/v1.0/schools?per_page=1000&cursor=true`)) schools.push(...data);
let rows = 0;
const queue = [...schools];
async function worker() {
  for (let s = queue.shift(); s; s = queue.shift()) {
    const base = a.domains[s.region?.domain] ?? a.apiUrl;
    const file = await open(join(a.dest, `${s.id}.ndjson`), 'w');
    for await (const data of pages(`${base}/v1.0/schools/${s.id}/achievements?per_page=1000&cursor=true&include=students%2Cemployees`)) {
      let out = '';
      for (const r of data) out += JSON.stringify(r) + '\n';
      await file.write(out);
      rows += data.length;
    }
    await file.close();
  }
}
await Promise.all(Array.from({ length: a.concurrency ?? 4 }, worker));
const ms = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
process.stdout.write(
  JSON.stringify({ ms, cpuMs: (cpu.user + cpu.system) / 1000, rows, maxRssMB: process.resourceUsage().maxRSS / 1024 }) + '\n',
);
process.exit(0);
