/** Turns the measurements into the one table (with targets), the JSON record and the README. */
import { execSync } from 'node:child_process';
import { cpus, totalmem } from 'node:os';
import type { IncrementalResult, LatencyRun, MemoryResult, Scale, ThroughputResult } from './sections.ts';

export interface Results {
  when: string;
  /** git HEAD the run measured (with -dirty when the tree had changes) */
  commit: string;
  /** what the export children ran: dist/ with plain Node, or src/ through tsx */
  code: 'dist' | 'src';
  mode: string;
  machine: Machine;
  scale: Scale;
  throughput?: ThroughputResult;
  memory?: MemoryResult;
  latency?: LatencyRun[];
  incremental?: IncrementalResult;
}

export interface Machine {
  nproc: number;
  memGiB: number;
  cpu: string;
  node: string;
}

export function machine(): Machine {
  let nproc = cpus().length;
  try {
    nproc = Number(execSync('nproc').toString().trim());
  } catch {
    /* cpus() then */
  }
  return { nproc, memGiB: Math.round(totalmem() / 2 ** 30), cpu: cpus()[0]?.model ?? 'unknown', node: process.version };
}

export interface Line {
  section: string;
  measure: string;
  value: string;
  target: string;
  verdict: '' | 'pass' | 'FAIL';
}

const int = (n: number) => Math.round(n).toLocaleString('en-US');
const pct = (n: number) => `${(n * 100).toFixed(1)}%`;
const mb = (n: number) => `${n.toFixed(0)} MB`;
const rate = (rows: number, ms: number) => (rows * 1000) / ms;
const verdict = (ok: boolean): Line['verdict'] => (ok ? 'pass' : 'FAIL');

export function lines(r: Results): Line[] {
  const out: Line[] = [];
  const t = r.throughput;
  if (t) {
    const ceil = rate(t.ceiling.rows, t.ceiling.ceilingMs);
    out.push({
      section: '1 ceiling',
      measure: `gunzip + JSON.parse of the ${t.ceiling.pages} pages received (${(t.ceiling.gzipBytes / 2 ** 20).toFixed(1)} MiB gzip, ${(t.ceiling.rawBytes / 2 ** 20).toFixed(1)} MiB JSON)`,
      value: `${int(ceil)} rows/s`,
      target: '',
      verdict: '',
    });
    const goals: Record<string, number | undefined> = { ndjson: 0.5, csv: 0.35, parquet: 0.3, parquet_s3: undefined };
    for (const [f, goal] of Object.entries(goals)) {
      const e = t.e2e[f as keyof typeof t.e2e];
      const rows = e.rows.achievements ?? 0;
      const ratio = rate(rows, e.ms) / ceil;
      out.push({
        section: '2 end to end',
        measure: f === 'parquet_s3' ? 'Parquet to S3 (s3rver, own process)' : `${f.toUpperCase()} to local disk`,
        value: `${int(rate(rows, e.ms))} rows/s = ${pct(ratio)} of ceiling (RSS ${mb(e.maxRssMB)})`,
        target: goal === undefined ? '' : `>= ${pct(goal)}`,
        verdict: goal === undefined ? '' : verdict(ratio >= goal),
      });
    }
    for (const [f, sh] of Object.entries(t.sharded)) {
      out.push({
        section: '2 end to end',
        measure: `${f.toUpperCase()}, two shard processes at once (--shard 0/2, 1/2)`,
        value: `${int(rate(sh.rows, sh.ms))} rows/s = ${pct(rate(sh.rows, sh.ms) / ceil)} of ceiling (RSS ${mb(sh.maxRssMB)} each)`,
        target: '',
        verdict: '',
      });
    }
    const st = t.stages;
    const stage = (measure: string, ms: number) =>
      out.push({
        section: '2b stages',
        measure,
        value: `${int(rate(st.rows, ms))} rows/s (${pct(rate(st.rows, ms) / ceil)} of ceiling)`,
        target: '',
        verdict: '',
      });
    stage(`gunzip + JSON.parse, one process, ${int(st.rows)} rows`, st.parseMs);
    stage('+ flatten (3 tables)', st.flattenMs);
    for (const f of ['ndjson', 'csv', 'parquet'] as const) stage(`+ ${f} writers (to a discarding stream)`, st.formatMs[f]);
    const duck = rate(t.duckdb.rows, t.duckdb.ms);
    const ours = rate(t.e2e.parquet.rows.achievements ?? 0, t.e2e.parquet.ms);
    out.push({
      section: '3 native anchor',
      measure: `DuckDB read_json -> Parquet (${t.duckdb.threads} threads)`,
      value: `${int(duck)} rows/s`,
      target: '',
      verdict: '',
    });
    out.push({ section: '3 native anchor', measure: 'our Parquet path / DuckDB', value: pct(ours / duck), target: '', verdict: '' });
    const dec = (ms: number) => `${int(rate(t.ceiling.rows, ms))} rows/s (${pct(t.ceiling.ceilingMs / ms)} of ceiling)`;
    out.push({
      section: '7 decode paths',
      measure: 'decodeBuffered (JSON.parse per page)',
      value: dec(t.ceiling.bufferedMs),
      target: '',
      verdict: '',
    });
    out.push({
      section: '7 decode paths',
      measure: 'decodeStreamed (stream-json)',
      value: dec(t.ceiling.streamedMs),
      target: '',
      verdict: '',
    });
  }
  if (r.memory) {
    const sizes = Object.keys(r.memory)
      .map(Number)
      .sort((a, b) => a - b);
    const small = sizes[0]!;
    for (const f of ['ndjson', 'csv', 'parquet'] as const) {
      for (const n of sizes) {
        const rss = r.memory[n]![f].maxRssMB;
        const base = r.memory[small]![f].maxRssMB;
        const big = n !== small;
        const ok = rss <= 200 && (!big || rss <= base * 1.2);
        out.push({
          section: '4 memory',
          measure: `peak RSS, ${f}, one school of ${int(n)} rows`,
          value: big ? `${mb(rss)} (${(rss / base).toFixed(2)}x the ${int(small)} figure)` : mb(rss),
          target: big ? '<= 200 MB and <= 1.2x' : '<= 200 MB',
          verdict: verdict(ok),
        });
      }
    }
  }
  for (const l of r.latency ?? []) {
    out.push({
      section: '5 latency-bound',
      measure: `wall, concurrency ${l.concurrency} (min = ${l.minRequests} pages x ${r.scale.latency.ms} ms / ${l.concurrency})`,
      value: `${int(l.ms)} ms = ${(l.ms / l.minMs).toFixed(2)}x min (${int(l.minMs)} ms; cursor chains allow ${int(l.chainMs)} = ${(l.chainMs / l.minMs).toFixed(2)}x)`,
      target: '<= 1.2x',
      verdict: verdict(l.ms <= 1.2 * l.minMs),
    });
    out.push({
      section: '5 latency-bound',
      measure: `requests, concurrency ${l.concurrency}`,
      value: `${l.requests} (min ${l.minRequests})`,
      target: '= min',
      verdict: verdict(l.requests === l.minRequests),
    });
  }
  const inc = r.incremental;
  if (inc) {
    const tr = inc.incremental.ms / inc.full.ms;
    const rr = inc.incremental.requests / inc.full.requests;
    out.push({
      section: '6 incremental',
      measure: `time after ${int(inc.changed)} of ${int(inc.total)} rows changed`,
      value: `${int(inc.incremental.ms)} / ${int(inc.full.ms)} ms = ${pct(tr)}`,
      target: '<= 5%',
      verdict: verdict(tr <= 0.05),
    });
    out.push({
      section: '6 incremental',
      measure: `requests (${int(inc.incremental.rows)} rows re-read)`,
      value: `${inc.incremental.requests} / ${inc.full.requests} = ${pct(rr)}`,
      target: '<= 5%',
      verdict: verdict(rr <= 0.05),
    });
  }
  return out;
}

/** A Markdown table: readable in a terminal and in the README alike. */
export function table(ls: Line[]): string {
  const head: Line = { section: 'section', measure: 'measure', value: 'value', target: 'target', verdict: '' };
  const rows = [head, ...ls].map((l) => [
    l.section,
    l.measure,
    l.value,
    l.target,
    l.verdict === '' && l !== head ? '' : l === head ? 'result' : l.verdict,
  ]);
  const w = [0, 1, 2, 3, 4].map((i) => Math.max(...rows.map((r) => r[i]!.length)));
  const fmt = (r: string[]) => '| ' + r.map((c, i) => c.padEnd(w[i]!)).join(' | ') + ' |';
  return [fmt(rows[0]!), '|' + w.map((n) => '-'.repeat(n + 2)).join('|') + '|', ...rows.slice(1).map(fmt)].join('\n');
}

export function gitCommit(): string {
  try {
    const head = execSync('git rev-parse --short HEAD', { stdio: ['ignore', 'pipe', 'ignore'] })
      .toString()
      .trim();
    const dirty = execSync('git status --porcelain --untracked-files=no -- src bench', { stdio: ['ignore', 'pipe', 'ignore'] })
      .toString()
      .trim();
    return dirty ? `${head}-dirty` : head;
  } catch {
    return 'unknown';
  }
}

export function machineLine(m: Machine): string {
  return `${m.nproc} CPUs (${m.cpu}), ${m.memGiB} GiB RAM, Node ${m.node}`;
}
