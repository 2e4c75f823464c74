/** Runs the sections for a mode and records the results (JSON, table, README). */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { execSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bigSchool, incremental, latency, memory, throughput, type Opts, type Scale, type Shape } from './sections.ts';
import { live } from './live.ts';
import { startup } from './startup.ts';
import { properties } from './properties.ts';
import { distIsFresh } from './procs.ts';
import { atScale } from './scale.ts';
import { gitCommit, lines, machine, machineLine, table, type Results } from './report.ts';

export type Mode = 'full' | 'quick' | 'tiny';

export const SCALES: Record<Mode, Scale> = {
  // throughput: 120,000 achievements with students and employees (about 460,000 rows in the wide
  // shape), the data set of issue 21's measurements
  full: {
    throughput: { schools: 4, rows: 30_000, repeat: 3, stages: { repeat: 2, maxPages: 50 } },
    memory: [100_000, 1_000_000],
    latency: { schools: 50, rows: 150, maxPerPage: 50, ms: 100, concurrency: [8, 32] },
    incremental: { schools: 4, rows: 50_000 },
    bigSchool: { rows: 100_000, maxPerPage: 100, ms: 100, concurrency: 8, windows: 8, repeat: 2 },
    live: { schools: 4, rows: 10_000, repeat: 3 },
    startup: { schools: 6, rows: 10, repeat: 5 },
    properties: { rounds: 40 },
  },
  quick: {
    throughput: { schools: 4, rows: 30_000, repeat: 1, stages: { repeat: 2, maxPages: 50 } },
    memory: [100_000],
    latency: { schools: 50, rows: 150, maxPerPage: 50, ms: 100, concurrency: [8, 32] },
    incremental: { schools: 4, rows: 50_000 },
    bigSchool: { rows: 100_000, maxPerPage: 100, ms: 100, concurrency: 8, windows: 8, repeat: 1 },
    live: { schools: 4, rows: 10_000, repeat: 1 },
    startup: { schools: 6, rows: 10, repeat: 3 },
    properties: { rounds: 12 },
  },
  // For the smoke test: every section and every child process, on data small enough for seconds.
  tiny: {
    throughput: { schools: 2, rows: 1_500, repeat: 1, stages: { repeat: 1, maxPages: 50 } },
    memory: [2_000],
    latency: { schools: 3, rows: 150, maxPerPage: 50, ms: 20, concurrency: [2, 4] },
    incremental: { schools: 2, rows: 3_000 },
    bigSchool: { rows: 1_000, maxPerPage: 100, ms: 5, concurrency: 4, windows: 4, repeat: 1 },
    live: { schools: 2, rows: 500, repeat: 1 },
    startup: { schools: 2, rows: 10, repeat: 1 },
    // npm test runs the property checks themselves (test/integration/value-properties.test.ts)
    properties: { rounds: 0 },
  },
};

/** Every section runs once per data shape of the sandbox (src/sandbox/wide.ts), side by side in the table. */
export const SHAPES: readonly Shape[] = ['standard', 'wide'];

export interface BenchOptions {
  mode: Mode;
  /** where results.json goes (default: none) */
  out?: string;
  /** READMEs whose table block (between the bench:results markers) is replaced */
  readmes?: string[];
  nodeArgs?: string[];
  log?: (s: string) => void;
  /** run only these sections (throughput, memory, latency, big-school, incremental, live, startup, scale, properties); default all */
  only?: string[];
  /** run only these data shapes; default both */
  shapes?: readonly Shape[];
}

export async function runBench(o: BenchOptions): Promise<{ results: Results; table: string }> {
  const work = await mkdtemp(join(tmpdir(), 'school-export-bench-'));
  const log = o.log ?? (() => {});
  const scale = SCALES[o.mode];
  const base = { scale, work, nodeArgs: o.nodeArgs, log };
  const shapes = o.shapes ?? SHAPES;
  const results: Results = {
    when: new Date().toISOString(),
    commit: gitCommit(),
    code: distIsFresh() ? 'dist' : 'src',
    mode: o.mode,
    machine: machine(),
    scale,
  };
  try {
    const want = (s: string) => !o.only || o.only.includes(s);
    /** one section over each shape: its results by shape */
    const each = async <T>(fn: (opts: Opts) => Promise<T>): Promise<Partial<Record<Shape, T>>> => {
      const out: Partial<Record<Shape, T>> = {};
      for (const shape of shapes) out[shape] = await fn({ ...base, shape });
      return out;
    };
    if (want('throughput')) results.throughput = await each(throughput);
    if (want('memory')) results.memory = await each(memory);
    if (want('latency')) results.latency = await each(latency);
    if (want('big-school')) results.bigSchool = await each(bigSchool);
    if (want('incremental')) results.incremental = await each(incremental);
    if (want('live')) results.live = await each(live);
    if (want('startup')) results.startup = await each(startup);
    // not per shape: the per-school overhead of many small schools (issue 19)
    if (want('scale')) results.atScale = await atScale({ ...base, shape: 'standard' }, o.mode);
    // not per shape: the rounds set their own values into the sandbox's records
    if (want('properties') && scale.properties.rounds > 0) results.properties = await properties({ ...base, shape: 'standard' });
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  const text = table(lines(results));
  if (o.out) await writeFile(o.out, JSON.stringify(results, null, 2) + '\n');
  for (const readme of o.readmes ?? []) await updateReadme(readme, results, text);
  return { results, table: text };
}

const START = '<!-- bench:results:start -->';
const END = '<!-- bench:results:end -->';

/**
 * Replaces the table block of a README (between the bench:results markers) with `text`, measured by
 * `r`. `rendered`: `r` is an earlier run's record, so the block keeps the memory it showed then
 * rather than this machine's `free -g` now.
 */
export async function updateReadme(path: string, r: Results, text: string, o: { rendered?: boolean } = {}): Promise<void> {
  const readme = await readFile(path, 'utf8');
  const a = readme.indexOf(START);
  const b = readme.indexOf(END);
  if (a < 0 || b < a) throw new Error(`${path}: no ${START} ... ${END} block to replace`);
  const shown = o.rendered ? /\$ free -g\n([\s\S]*?)\n\$ node --version/.exec(readme.slice(a, b))?.[1] : undefined;
  let free: string;
  try {
    free = shown ?? execSync('free -g').toString().trim();
  } catch {
    free = '(free not available)';
  }
  const block = [
    START,
    `Latest run: ${r.when} (\`${r.mode}\` mode, commit ${r.commit}, exports running ${r.code === 'dist' ? 'dist/ with plain Node, as the installed command' : 'src/ through tsx'}) on ${machineLine(r.machine)}.`,
    '',
    text,
    '',
    '```',
    `$ nproc\n${r.machine.nproc}`,
    `$ free -g\n${free}`,
    `$ node --version\n${r.machine.node}`,
    `$ grep -m1 'model name' /proc/cpuinfo\nmodel name\t: ${r.machine.cpu}`,
    '```',
    END,
  ].join('\n');
  await writeFile(path, readme.slice(0, a) + block + readme.slice(b + END.length));
}
