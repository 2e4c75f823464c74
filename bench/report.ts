/** Turns the measurements into the one table (with targets), the JSON record and the README. */
import { execSync } from 'node:child_process';
import { cpus, totalmem } from 'node:os';
import { SIDE_BY_SIDE_FORMAT } from './sections.ts';
import type {
  BigSchoolResult,
  BigSchoolRun,
  Format,
  IncrementalResult,
  LatencyRun,
  MemoryResult,
  Scale,
  Shape,
  ThroughputResult,
} from './sections.ts';
import type { LiveResult } from './live.ts';
import type { StartupResult } from './startup.ts';
import type { PropertiesResult } from './properties.ts';

/** A section's results per data shape of the sandbox. */
type ByShape<T> = Partial<Record<Shape, T>>;
import { scaleLines, type ScaleResult } from './scale.ts';
import { defaultWorkers } from '../src/encode/pool.ts';
import { formatByName } from '../src/format/index.ts';

export interface Results {
  when: string;
  /** git HEAD the run measured (with -dirty when the tree had changes) */
  commit: string;
  /** what the export children ran: dist/ with plain Node, or src/ through tsx */
  code: 'dist' | 'src';
  mode: string;
  machine: Machine;
  scale: Scale;
  throughput?: ByShape<ThroughputResult>;
  memory?: ByShape<MemoryResult>;
  latency?: ByShape<LatencyRun[]>;
  bigSchool?: ByShape<BigSchoolResult>;
  incremental?: ByShape<IncrementalResult>;
  live?: ByShape<LiveResult>;
  startup?: ByShape<StartupResult>;
  /** section 8 (bench/scale.ts): thousands of schools (standard shape) */
  atScale?: ScaleResult;
  properties?: PropertiesResult;
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
  /** the sandbox's data shape the figure was measured on ('' for none) */
  shape?: string;
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

/**
 * A "default / --workers 0" row (issue 21 item 4: the default is never slower). Where the default
 * starts no worker thread for the format on this many CPUs (src/encode/pool.ts, defaultWorkers), the
 * two runs are one configuration measured twice: their ratio is this machine's noise, shown as
 * such, not judged (the sixth session's full bench marked FAIL at 1.01-1.31 rows whose two runs
 * could not differ: a false alarm).
 */
function defaultAgainstW0(
  format: Format,
  nproc: number,
  defaultMs: number,
  w0Ms: number,
  detail = '',
): Pick<Line, 'value' | 'target' | 'verdict'> {
  const ratio = `${(defaultMs / w0Ms).toFixed(2)} (${int(defaultMs)} / ${int(w0Ms)} ms${detail})`;
  if (defaultWorkers(formatByName(format).workersToGain, nproc) === 0) {
    return {
      value: `${ratio}; the same configuration on ${nproc} CPUs (no worker thread for ${format.toUpperCase()}): the difference is noise`,
      target: '<= 1.0',
      verdict: 'pass',
    };
  }
  return { value: ratio, target: '<= 1.0', verdict: verdict(defaultMs <= w0Ms) };
}

/**
 * Every figure, per section, each measure on the standard shape beside the same measure on the
 * wide one (the rows of a section are produced in the same order for both shapes, then zipped).
 */
export function lines(r: Results): Line[] {
  const out: Line[] = [];
  const { nproc } = r.machine;
  const sections: [ByShape<unknown> | undefined, (shape: Shape) => Line[]][] = [
    [r.throughput, (sh) => throughputLines(r.throughput![sh]!, sh, nproc)],
    [r.memory, (sh) => memoryLines(r.memory![sh]!, sh, r.throughput?.[sh])],
    [r.latency, (sh) => latencyLines(r.latency![sh]!, r.scale, nproc)],
    [r.bigSchool, (sh) => bigSchoolLines(r.bigSchool![sh]!, nproc)],
    [r.incremental, (sh) => incrementalLines(r.incremental![sh]!, nproc)],
    // not per shape: measured on the standard one
    [r.atScale ? { standard: r.atScale } : undefined, () => scaleLines(r.atScale)],
    [r.live, (sh) => liveLines(r.live![sh]!, nproc)],
    [r.startup, (sh) => startupLines(r.startup![sh]!)],
  ];
  for (const [res, make] of sections) {
    if (!res) continue;
    const per = (Object.keys(res) as Shape[]).map((sh) => make(sh).map((l) => ({ ...l, shape: sh })));
    const n = Math.max(0, ...per.map((p) => p.length));
    for (let i = 0; i < n; i++) for (const p of per) if (p[i]) out.push(p[i]!);
  }
  if (r.properties) out.push(propertiesLine(r.properties));
  return out;
}

function propertiesLine(p: PropertiesResult): Line {
  return {
    section: '11 properties',
    measure: `generated values (issue 25 item 4), ${p.rounds} seeded rounds from PROPERTY_SEED=${p.firstSeed}: NDJSON, CSV, Parquet into DuckDB by warehouse load and the static plan`,
    value: `${int(p.checked)} values compared, ${int(p.mismatches.length)} mismatches (${(p.ms / 1000).toFixed(0)} s)`,
    target: '0 mismatches',
    verdict: verdict(p.mismatches.length === 0),
  };
}

/** Issue 13's targets (standard shape) and issue 21's (wide shape), for the end-to-end runs against the hand-written script. */
const WALL_GOALS: Record<Shape, Partial<Record<Format, number>>> = {
  standard: { ndjson: 0.8, parquet: 1.0 },
  wide: { ndjson: 0.9, parquet: 1.1 },
};
const CPU_GOALS: Record<Shape, Partial<Record<Format, number>>> = { standard: {}, wide: { ndjson: 1.8, parquet: 2.2 } };
const RSS_GOAL = 200;

function throughputLines(t: ThroughputResult, shape: Shape, nproc: number): Line[] {
  const out: Line[] = [];
  const ceil = rate(t.ceiling.rows, t.ceiling.ceilingMs);
  out.push({
    section: '1 ceiling',
    measure: `gunzip + JSON.parse of the ${t.ceiling.pages} pages received (${(t.ceiling.gzipBytes / 2 ** 20).toFixed(1)} MiB gzip, ${(t.ceiling.rawBytes / 2 ** 20).toFixed(1)} MiB JSON)`,
    value: `${int(ceil)} rows/s`,
    target: '',
    verdict: '',
  });
  // issue 13's shares of the ceiling, with the default pool (standard shape)
  const goals: Partial<Record<Format, number>> = shape === 'standard' ? { ndjson: 0.8, csv: 0.6, parquet: 0.5 } : {};
  const spread = (ms: number[]) => (ms.length > 1 ? `; runs ${ms.map((m) => (m / 1000).toFixed(1)).join(' / ')} s` : '');
  for (const f of ['ndjson', 'csv', 'parquet'] as const) {
    for (const w0 of [false, true]) {
      const runs = t.e2e[w0 ? (`${f}_w0` as const) : f];
      const e = runs.median;
      const rowsA = e.rows.achievements ?? 0;
      const ratio = rate(rowsA, e.ms) / ceil;
      const goal = w0 ? undefined : goals[f];
      out.push({
        section: '2 end to end',
        measure: `${f.toUpperCase()} to local disk, ${w0 ? '--workers 0 (one thread)' : 'default (threads once the main thread is busy, if the format gains from them on this many CPUs)'}`,
        value: `${int(rate(rowsA, e.ms))} rows/s = ${pct(ratio)} of ceiling (CPU ${(e.cpuMs / 1000).toFixed(1)} s, RSS ${mb(e.maxRssMB)}${spread(runs.ms)})`,
        target: goal === undefined ? '' : `>= ${pct(goal)}`,
        verdict: goal === undefined ? '' : verdict(ratio >= goal),
      });
    }
    out.push({
      section: '2 end to end',
      measure: `${f.toUpperCase()}: wall, default / --workers 0 (medians of the same rounds)`,
      ...defaultAgainstW0(f, nproc, t.e2e[f].median.ms, t.e2e[`${f}_w0`].median.ms),
    });
  }
  const s3 = t.parquet_s3;
  out.push({
    section: '2 end to end',
    measure: 'Parquet to S3 (s3rver, own process), default',
    value: `${int(rate(s3.rows.achievements ?? 0, s3.ms))} rows/s = ${pct(rate(s3.rows.achievements ?? 0, s3.ms) / ceil)} of ceiling (RSS ${mb(s3.maxRssMB)})`,
    target: '',
    verdict: '',
  });
  const raw = t.raw.median;
  out.push({
    section: '2a hand-written',
    measure: 'raw-dump script (fetch + JSON.parse + raw NDJSON, bench/raw-dump.mjs), same bytes',
    value: `${int(rate(raw.rows, raw.ms))} rows/s, ${int(raw.ms)} ms (CPU ${(raw.cpuMs / 1000).toFixed(1)} s, RSS ${mb(raw.maxRssMB)}${spread(t.raw.ms)})`,
    target: '',
    verdict: '',
  });
  const rawCpu = median(t.raw.cpuMs ?? [raw.cpuMs]);
  for (const f of ['ndjson', 'csv', 'parquet'] as const) {
    for (const w0 of [false, true]) {
      const runs = t.e2e[w0 ? (`${f}_w0` as const) : f];
      const e = runs.median;
      const ratio = e.ms / raw.ms;
      const goal = w0 ? undefined : WALL_GOALS[shape][f];
      out.push({
        section: '2a hand-written',
        measure: `our ${f.toUpperCase()} wall time / the script's, ${w0 ? '--workers 0' : 'default'}`,
        value: `${ratio.toFixed(2)} (${int(e.ms)} / ${int(raw.ms)} ms)`,
        target: goal === undefined ? '' : `<= ${goal.toFixed(1)}`,
        verdict: goal === undefined ? '' : verdict(ratio <= goal),
      });
    }
    // CPU of every thread, medians of the rounds (the script's too)
    const cpu = median(t.e2e[f].cpuMs ?? [t.e2e[f].median.cpuMs]);
    const goal = CPU_GOALS[shape][f];
    out.push({
      section: '2a hand-written',
      measure: `our ${f.toUpperCase()} CPU time (all threads) / the script's, default`,
      value: `${(cpu / rawCpu).toFixed(2)} (${int(cpu)} / ${int(rawCpu)} ms)`,
      target: goal === undefined ? '' : `<= ${goal.toFixed(1)}`,
      verdict: goal === undefined ? '' : verdict(cpu / rawCpu <= goal),
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
  stage(`gunzip + JSON.parse, one thread, ${int(st.rows)} rows`, st.parseMs);
  stage('+ flatten (3 tables), the reference path', st.flattenMs);
  for (const f of ['ndjson', 'csv', 'parquet'] as const) stage(`+ ${f} writers, reference path (rows)`, st.formatMs[f]);
  if (st.parquetLiteMs !== undefined) stage('+ parquet writers, reference path, --parquet-writer parquetjs-lite', st.parquetLiteMs);
  if (st.encodedMs)
    for (const f of ['ndjson', 'csv', 'parquet'] as const) stage(`+ ${f}: generated serialisers + memo (one thread)`, st.encodedMs[f]);
  const pl = t.pool;
  for (const f of ['ndjson', 'csv', 'parquet'] as const) {
    for (const [w, ms] of Object.entries(pl.ms[f])) {
      out.push({
        section: '2c page work',
        measure: `${f}: gunzip + parse + encode + writers, ${w === '0' ? 'main thread only' : `${w} worker thread${w === '1' ? '' : 's'}`} (no HTTP, no disk)`,
        value: `${int(rate(pl.rows, ms))} rows/s (${pct(rate(pl.rows, ms) / ceil)} of ceiling)`,
        target: '',
        verdict: '',
      });
    }
  }
  const duck = rate(t.duckdb.rows, t.duckdb.ms);
  const ours = rate(t.e2e.parquet.median.rows.achievements ?? 0, t.e2e.parquet.median.ms);
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
  return out;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] ?? NaN;

function memoryLines(m: MemoryResult, _shape: Shape, t: ThroughputResult | undefined): Line[] {
  const out: Line[] = [];
  const sizes = Object.keys(m)
    .map(Number)
    .sort((a, b) => a - b);
  const small = sizes[0]!;
  for (const f of ['ndjson', 'csv', 'parquet'] as const) {
    // the end-to-end runs' data set (several schools at once), every round's peak
    if (t) {
      const rss = Math.max(t.e2e[f].median.maxRssMB, ...(t.e2e[f].rss ?? []));
      const rows = t.e2e[f].median.rows.achievements ?? 0;
      out.push({
        section: '4 memory',
        measure: `peak RSS, ${f}, ${int(rows)} achievements from several schools at once (the end-to-end runs, default)`,
        value: mb(rss),
        target: `<= ${RSS_GOAL} MB`,
        verdict: verdict(rss <= RSS_GOAL),
      });
    }
    for (const n of sizes) {
      const rss = m[n]![f].maxRssMB;
      const base = m[small]![f].maxRssMB;
      const big = n !== small;
      const ok = rss <= RSS_GOAL && (!big || rss <= base * 1.2);
      out.push({
        section: '4 memory',
        measure: `peak RSS, ${f}, one school of ${int(n)} rows`,
        value: big ? `${mb(rss)} (${(rss / base).toFixed(2)}x the ${int(small)} figure)` : mb(rss),
        target: big ? `<= ${RSS_GOAL} MB and <= 1.2x` : `<= ${RSS_GOAL} MB`,
        verdict: verdict(ok),
      });
    }
  }
  return out;
}

function latencyLines(ls: LatencyRun[], scale: Scale, nproc: number): Line[] {
  const out: Line[] = [];
  for (const l of ls) {
    if (l.workers0) {
      const d = ls.find((x) => x.concurrency === l.concurrency && !x.connections && !x.workers0);
      out.push({
        section: '5 latency-bound',
        measure: `wall, concurrency ${l.concurrency}, default / --workers 0, side by side`,
        ...(d ? defaultAgainstW0(SIDE_BY_SIDE_FORMAT, nproc, d.ms, l.ms) : { value: `${int(l.ms)} ms`, target: '<= 1.0', verdict: '' }),
      });
      continue;
    }
    if (l.connections !== undefined) {
      out.push({
        section: '5 latency-bound',
        measure: `wall, concurrency ${l.concurrency} with --connections-per-domain ${l.connections} (the old default), side by side`,
        value: `${int(l.ms)} ms = ${(l.ms / l.minMs).toFixed(2)}x min`,
        target: '',
        verdict: '',
      });
      continue;
    }
    out.push({
      section: '5 latency-bound',
      measure: `wall, concurrency ${l.concurrency} (min = ${l.minRequests} pages x ${scale.latency.ms} ms / ${l.concurrency})`,
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
  return out;
}

function incrementalLines(inc: IncrementalResult, nproc: number): Line[] {
  const tr = inc.incremental.ms / inc.full.ms;
  const rr = inc.incremental.requests / inc.full.requests;
  const w0 = inc.workers0;
  return [
    {
      section: '6 incremental',
      measure: `time after ${int(inc.changed)} of ${int(inc.total)} rows changed`,
      value: `${int(inc.incremental.ms)} / ${int(inc.full.ms)} ms = ${pct(tr)}`,
      target: '<= 5%',
      verdict: verdict(tr <= 0.05),
    },
    {
      section: '6 incremental',
      measure: `requests (${int(inc.incremental.rows)} rows re-read)`,
      value: `${inc.incremental.requests} / ${inc.full.requests} = ${pct(rr)}`,
      target: '<= 5%',
      verdict: verdict(rr <= 0.05),
    },
    {
      section: '6 incremental',
      measure: 'full run, default / --workers 0, side by side',
      ...defaultAgainstW0(SIDE_BY_SIDE_FORMAT, nproc, inc.full.ms, w0.full.ms),
    },
    {
      section: '6 incremental',
      measure: 'incremental run, default / --workers 0, side by side',
      ...defaultAgainstW0(SIDE_BY_SIDE_FORMAT, nproc, inc.incremental.ms, w0.incremental.ms),
    },
  ];
}

function liveLines(l: LiveResult, nproc: number): Line[] {
  const out: Line[] = [];
  const secs = (ms: number[]) => ms.map((m) => (m / 1000).toFixed(1)).join(' / ');
  for (const f of ['ndjson', 'parquet'] as const) {
    const d = l.runs[f];
    const z = l.runs[`${f}_w0`];
    for (const [label, r] of [
      ['default', d],
      ['--workers 0', z],
    ] as const) {
      out.push({
        section: '9 live server',
        measure: `${f.toUpperCase()}, ${l.schools} x ${int(l.rows)} achievements from a live sandbox on the same cores, ${label}`,
        value: `${int(r.median.ms)} ms (CPU ${(r.median.cpuMs / 1000).toFixed(1)} s, RSS ${mb(r.median.maxRssMB)}; runs ${secs(r.ms)} s)`,
        target: '',
        verdict: '',
      });
    }
    out.push({
      section: '9 live server',
      measure: `${f.toUpperCase()}: wall, default / --workers 0`,
      ...defaultAgainstW0(f, nproc, d.median.ms, z.median.ms),
    });
  }
  return out;
}

const STARTUP_GOAL_MS = 250;

function startupLines(s: StartupResult): Line[] {
  const cpu = s.median.cpuMs === undefined ? '' : `, CPU ${int(s.median.cpuMs)} ms`;
  return [
    {
      section: '10 start-up',
      measure: `the whole command as installed (node bin/school-export.js run), ${s.schools} schools x ${s.rows} achievements, live sandbox, NDJSON`,
      value: `${int(s.median.ms)} ms wall${cpu} (runs ${s.ms.map((m) => int(m)).join(' / ')} ms); Node's own start (node -e 0) ${int(s.nodeMs)} ms; from the checkout ${int(s.checkout.ms)} ms${s.checkout.cpuMs === undefined ? '' : ` (CPU ${int(s.checkout.cpuMs)} ms)`}`,
      target: `<= ${STARTUP_GOAL_MS} ms`,
      verdict: s.schools === 6 && s.rows === 10 ? verdict(s.median.ms <= STARTUP_GOAL_MS) : '',
    },
  ];
}

const WALL_GOAL = 1.3; // issue 13: one 100k-row school within 1.3x of pages x latency / concurrency, with windows
const REQUEST_GOAL = 1.05; // requests within 5% of the minimum

function bigSchoolLines(b: BigSchoolResult, nproc: number): Line[] {
  const section = '5b big school';
  const out: Line[] = [];
  const chainMs = b.pages * b.latencyMs; // one cursor chain: the school's pages one after another
  const secs = (ms: number[]) => ms.map((m) => (m / 1000).toFixed(1)).join(' / ');
  const { plain: p, windowed: w } = b;
  const what = `1 school x ${int(b.rows)} achievements (${int(b.pages)} pages) x ${b.latencyMs} ms, concurrency ${b.concurrency}`;
  const label = (r: BigSchoolRun) => (r.windows <= 1 ? 'no windows' : `--windows ${r.windows}`);
  out.push({
    section,
    measure: `wall, ${what}, no windows`,
    value: `${int(p.ms)} ms = ${(p.ms / chainMs).toFixed(2)}x one chain (${int(b.pages)} pages x ${b.latencyMs} ms = ${int(chainMs)} ms); ${(p.ms / p.minMs).toFixed(2)}x min (CPU ${secs([p.cpuMs])} s; runs ${secs(p.runs)} s)`,
    target: '',
    verdict: '',
  });
  // What the run's own split allows: the steps before the windows start (discovery, permissions
  // probe, sampling page, up to three rounds of probes) one after another, then the longest window.
  const longest = Math.max(0, ...Object.values(w.windowPages));
  const splitMs = (6 + longest) * b.latencyMs;
  out.push({
    section,
    measure: `wall, ${what}, ${label(w)} (min = ${int(w.minRequests)} requests x ${b.latencyMs} ms / ${b.concurrency})`,
    value: `${int(w.ms)} ms = ${(w.ms / w.minMs).toFixed(2)}x min (${int(w.minMs)} ms); ${(w.ms / p.ms).toFixed(2)}x no windows; its split allows ${int(splitMs)} ms (CPU ${secs([w.cpuMs])} s; runs ${secs(w.runs)} s)`,
    target: `<= ${WALL_GOAL}x min`,
    verdict: verdict(w.ms <= WALL_GOAL * w.minMs),
  });
  // keys are `after..before`: sorted, the first window (no after) comes first, then by time
  const pages = Object.entries(w.windowPages)
    .sort(([a], [c]) => (a < c ? -1 : a > c ? 1 : 0))
    .map(([, n]) => n);
  out.push({
    section,
    measure: `pages per updated_at window, ${label(w)} (counted by the front)`,
    value: pages.length ? `${pages.join(' / ')} (${pages.length} windows)` : 'none (no windowed request)',
    target: '',
    verdict: '',
  });
  const planning = 1 + w.probes;
  out.push({
    section,
    measure: `requests planning the windows (the sampling page + one-row probes), ${label(w)}`,
    value: `${int(planning)} = ${((100 * planning) / b.pages).toFixed(1)}% of the school's ${int(b.pages)} pages (${int(w.probes)} probes)`,
    target: '< 5% of pages',
    verdict: verdict(planning < 0.05 * b.pages),
  });
  for (const r of [p, w]) {
    const win = r.windows > 1;
    out.push({
      section,
      measure: `requests, ${label(r)}`,
      value: `${int(r.requests)} (min ${int(r.minRequests)} = ${int(b.pages)} pages${win ? ' + the sampling page' : ''} + ${b.fixed} fixed; ${(r.requests / r.minRequests).toFixed(3)}x)`,
      target: r === w ? `<= ${REQUEST_GOAL}x min` : '',
      verdict: r === w ? verdict(r.requests <= REQUEST_GOAL * r.minRequests) : '',
    });
  }
  if (b.windowedW0) {
    const z = b.windowedW0;
    out.push({
      section,
      measure: `wall, ${label(w)}, default / --workers 0, side by side (rounds interleaved)`,
      ...defaultAgainstW0(SIDE_BY_SIDE_FORMAT, nproc, w.ms, z.ms, `; CPU ${secs([w.cpuMs])} / ${secs([z.cpuMs])} s`),
    });
  }
  for (const r of [p, w]) {
    out.push({
      section,
      measure: `rows reported / distinct ids in the files, ${label(r)}`,
      value: `${int(r.rows)} / ${int(r.distinctIds)} of ${int(b.rows)}`,
      target: '= rows',
      verdict: verdict(r.rows === b.rows && r.distinctIds === b.rows),
    });
  }
  return out;
}

/** A Markdown table: readable in a terminal and in the README alike. */
export function table(ls: Line[]): string {
  const head: Line = { section: 'section', shape: 'shape', measure: 'measure', value: 'value', target: 'target', verdict: '' };
  const rows = [head, ...ls].map((l) => [
    l.section,
    l.shape ?? '',
    l.measure,
    l.value,
    l.target,
    l.verdict === '' && l !== head ? '' : l === head ? 'result' : l.verdict,
  ]);
  const w = [0, 1, 2, 3, 4, 5].map((i) => Math.max(...rows.map((r) => r[i]!.length)));
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
