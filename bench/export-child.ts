/**
 * One measured export, in its own process so peak RSS belongs to it alone.
 * Usage: node bin/run-ts.js bench/export-child.ts '<ChildArgs as JSON>'
 * Prints one JSON line: ChildResult. Timing covers runExport only (not process start-up).
 */
import { resolveRunConfig } from '../src/config/resolve.ts';
import { runExport } from '../src/pipeline/run.ts';
import type { Reporter } from '../src/pipeline/progress.ts';
import type { PipelineConfig } from '../src/config/schema.ts';

export interface ChildArgs {
  apiUrl: string;
  domains: Record<string, string>;
  token: string;
  dest: string;
  format: 'ndjson' | 'csv' | 'parquet';
  resources: string[];
  concurrency?: number;
  connectionsPerDomain?: number;
  fullRefresh?: boolean;
  s3Endpoint?: string;
  schools?: string[];
  /** any other pipeline-file settings (e.g. row_group_rows), as a user would set them */
  config?: PipelineConfig;
}

export interface ChildResult {
  ms: number;
  rows: Record<string, number>;
  pages: number;
  /** decompressed response bytes of paginated pages */
  bytes: number;
  maxRssMB: number;
  /** peaks of process.memoryUsage() sampled every 100 ms, MB: where the RSS goes */
  peaks: { heapTotal: number; heapUsed: number; external: number; arrayBuffers: number };
  status: string;
  failures: unknown[];
}

const a = JSON.parse(process.argv[2] ?? '{}') as ChildArgs;
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
// Pages and bytes per task, from the progress events (the last event of a task has its totals).
const perTask = new Map<string, { pages: number; bytes: number }>();
const reporter: Reporter = {
  emit(e) {
    if (e.event === 'task_progress') perTask.set(`${e.school_id} ${e.resource}`, { pages: e.pages, bytes: e.bytes });
  },
  close() {},
};
const peaks = { heapTotal: 0, heapUsed: 0, external: 0, arrayBuffers: 0 };
const sample = () => {
  const m = process.memoryUsage();
  for (const k of Object.keys(peaks) as (keyof typeof peaks)[]) peaks[k] = Math.max(peaks[k], m[k] / 2 ** 20);
};
const sampler = setInterval(sample, 100);
const t0 = performance.now();
const summary = await runExport(cfg, { token: a.token, reporter });
const ms = performance.now() - t0;
clearInterval(sampler);
sample();
let pages = 0;
let bytes = 0;
for (const t of perTask.values()) {
  pages += t.pages;
  bytes += t.bytes;
}
const rows = Object.fromEntries(Object.entries(summary.tables).map(([t, v]) => [t, v.rows]));
const result: ChildResult = {
  ms,
  rows,
  pages,
  bytes,
  maxRssMB: process.resourceUsage().maxRSS / 1024,
  peaks,
  status: summary.status,
  failures: summary.failures,
};
// stdout is a pipe (synchronous on Linux): exit at once rather than wait on idle sockets' timers
process.stdout.write(JSON.stringify(result) + '\n');
process.exit(0);
