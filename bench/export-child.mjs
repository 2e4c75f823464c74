/**
 * One measured export, in its own process so peak RSS belongs to it alone.
 * Runs the compiled dist/ with plain Node, as the installed command does (bin/school-export.js),
 * or with BENCH_CODE=src the TypeScript sources (started through bin/run-ts.js).
 * Usage: node bench/export-child.mjs '<ChildArgs as JSON>'  (types: bench/child-types.ts)
 * Prints one JSON line: ChildResult. Timing covers runExport only (not process start-up).
 */
const code = process.env.BENCH_CODE === 'src' ? 'src' : 'dist';
const mod = (p) => (code === 'src' ? `../src/${p}.ts` : `../dist/${p}.js`);
const { resolveRunConfig } = await import(mod('config/resolve'));
const { runExport } = await import(mod('pipeline/run'));
// what the installed command's entry point sets for the whole process before any command (src/cli/main.ts)
const heap = await import(mod('cli/heap'));
heap.boundHeap();
(await import(mod('cli/wasm-tier'))).keepWasmOnBaseline();

const a = JSON.parse(process.argv[2] ?? '{}');
const cfg = resolveRunConfig(undefined, {
  api_url: a.apiUrl,
  domains: a.domains,
  dest: a.dest,
  format: a.format,
  resources: a.resources,
  progress: 'none',
  ...(a.concurrency ? { concurrency: a.concurrency } : {}),
  ...(a.connectionsPerDomain ? { connections_per_domain: a.connectionsPerDomain } : {}),
  ...(a.fullRefresh ? { full_refresh: true } : {}),
  ...(a.s3Endpoint ? { s3_endpoint: a.s3Endpoint } : {}),
  ...(a.schools ? { schools: a.schools } : {}),
  ...a.config,
});
// and what `school-export run` sets once a task reads a large page (src/cli/run.ts)
const format = (await import(mod('format/index'))).formatByName(cfg.format);
const onLargePage = () => heap.boundForLargeReads(format);
// Pages and bytes, from the progress events (a task's last one has its totals), added up as each
// task ends: a map of every task would be memory the installed command does not hold (10,000 schools)
const running = new Map();
let pages = 0;
let bytes = 0;
const reporter = {
  emit(e) {
    if (!('resource' in e)) return;
    const key = `${e.school_id} ${e.resource}`;
    if (e.event === 'task_progress') running.set(key, { pages: e.pages, bytes: e.bytes });
    else if (/^task_(done|failed|skipped|interrupted)$/.test(e.event)) {
      const t = running.get(key);
      running.delete(key);
      pages += t?.pages ?? 0;
      bytes += t?.bytes ?? 0;
    }
  },
  close() {},
};
const peaks = { heapTotal: 0, heapUsed: 0, external: 0, arrayBuffers: 0 };
const sample = () => {
  const m = process.memoryUsage();
  for (const k of Object.keys(peaks)) peaks[k] = Math.max(peaks[k], m[k] / 2 ** 20);
};
const sampler = setInterval(sample, 100);
const t0 = performance.now();
const cpu0 = process.cpuUsage();
const summary = await runExport(cfg, { token: a.token, reporter, onLargePage });
const ms = performance.now() - t0;
// user + system time of the whole process (every thread: the encoding pool's workers too)
const cpu = process.cpuUsage(cpu0);
clearInterval(sampler);
sample();
for (const t of running.values()) {
  pages += t.pages;
  bytes += t.bytes;
}
const result = {
  ms,
  cpuMs: (cpu.user + cpu.system) / 1000,
  rows: Object.fromEntries(Object.entries(summary.tables).map(([t, v]) => [t, v.rows])),
  pages,
  bytes,
  maxRssMB: process.resourceUsage().maxRSS / 1024,
  peaks,
  status: summary.status,
  failures: summary.failures,
  code,
};
// stdout is a pipe (synchronous on Linux): exit at once rather than wait on idle sockets' timers
process.stdout.write(JSON.stringify(result) + '\n');
process.exit(0);
