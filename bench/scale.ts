/**
 * Section 8 of the benchmark (issue 19): thousands of schools of about two rows per table (the
 * sandbox's `rowsPerSchool: 'small'`). For each size, a full first night, then one achievement
 * changed in every school and an incremental night into the same destination; after each night
 * `warehouse load` into one DuckDB file and `status`, both run as the installed command is (a
 * child process of bin/school-export.js), so this measures whatever those commands do today.
 *
 * Per night: wall and CPU of the export (CPU per school against the issue's 12 ms), the requests
 * the sandbox answered, the data files and bytes the night added, the largest object under
 * `_manifests/`, the bytes of the schools' state files, the load's wall and peak RSS, and the
 * status command's wall and lines. The sandbox runs in its own process (its CPU is not counted),
 * without the replay front: each night's queries differ (updated_after), so nothing could be replayed.
 * After the incremental night, `status` runs once more against S3 (s3rver in its own process),
 * the destination's `_state/` and `_manifests/` copied there: on S3 each state file is a request.
 */
import pLimit from 'p-limit';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ChildArgs, ChildResult } from './child-types.ts';
import { ROOT, runChild, startSandboxProc, type SandboxProc } from './procs.ts';
import type { Line } from './report.ts';
import type { Opts } from './sections.ts';
import { S3RVER_CREDENTIALS, S3RVER_ENV, startS3rver } from '../test/helpers/s3rver.ts';
import { newRunId } from '../src/manifest/run-id.ts';
import { DigestedStates, StateDigestWriter } from '../src/manifest/state-digest.ts';
import { listStates, type WrittenState } from '../src/manifest/state-store.ts';
import { S3Sink } from '../src/sink/s3.ts';

/**
 * Schools per case, by bench mode (the 10,000 case takes minutes: full mode only). 400 is a night
 * under the line where `warehouse load` keeps DuckDB's freed memory (src/warehouse/duckdb-allocator.ts),
 * the bigger ones above it: the table shows both sides.
 */
export const SCALE_SCHOOLS: Record<string, number[]> = { full: [400, 2_000, 10_000], quick: [400, 2_000], tiny: [6] };
const CONCURRENCY = 16;
const FORMAT = 'parquet';

/** What one command (warehouse load, status) cost, measured in its own process. */
/** `status` on S3 with the states' digest; `direct`: before it was written (one GetObject a school). */
export type StatusOnS3 = CommandCost & { objects: number; direct?: CommandCost; states?: number; covered?: number };

export interface CommandCost {
  ms: number;
  /** peak RSS of the command's process */
  maxRssMB: number;
  cpuMs: number;
  exitCode: number | null;
  /** lines the command printed on stdout */
  lines: number;
}

export interface ScaleNight {
  ms: number;
  cpuMs: number;
  cpuPerSchoolMs: number;
  maxRssMB: number;
  status: string;
  failures: unknown[];
  requests: number;
  /** data files (not under _state/ or _manifests/) the night added, and their bytes */
  dataFiles: number;
  dataBytes: number;
  /** objects under _manifests/ after the night, and the largest of them */
  manifestObjects: number;
  largestManifestBytes: number;
  /** the schools' state files (_state/region=...) after the night */
  stateFiles: number;
  stateBytes: number;
  /** tasks the run manifest lists by status (committed, unchanged, ...) */
  tasks: Record<string, number>;
  load: CommandCost;
  statusCmd: CommandCost;
}

export interface ScaleCase {
  schools: number;
  full: ScaleNight;
  /** (school, table) pairs the changed achievements touch: achievements and each include with rows */
  changedPairs: number;
  incremental: ScaleNight;
  /** `status` after the incremental night against S3: what it read copied to s3rver first */
  statusS3?: StatusOnS3;
}

export interface ScaleResult {
  concurrency: number;
  format: string;
  cases: ScaleCase[];
}

export async function atScale(o: Opts, mode: string): Promise<ScaleResult> {
  const cases: ScaleCase[] = [];
  for (const schools of SCALE_SCHOOLS[mode] ?? SCALE_SCHOOLS.quick!) cases.push(await scaleCase(o, schools));
  return { concurrency: CONCURRENCY, format: FORMAT, cases };
}

async function scaleCase(o: Opts, schools: number): Promise<ScaleCase> {
  const sb = await startSandboxProc({ seed: 1, schools, rowsPerSchool: 'small' }, false);
  const dir = await mkdtemp(join(o.work, `scale-${schools}-`));
  const dest = join(dir, 'exports');
  const db = join(dir, 'warehouse.duckdb');
  try {
    o.log(`scale: ${schools} schools, full night`);
    const full = await night(o, sb, { dest, db, schools });
    const touched = (await sb.command({ cmd: 'touch', schools })) as { changed: number; pairs: number };
    if (touched.changed !== schools) throw new Error(`scale: changed ${touched.changed} achievements, expected ${schools}`);
    o.log(`scale: ${schools} schools, one achievement changed in each; incremental night`);
    const incremental = await night(o, sb, { dest, db, schools });
    o.log(`scale: ${schools} schools: status on S3 (s3rver)`);
    const statusS3 = await statusOnS3(o, dest);
    return { schools, full, changedPairs: touched.pairs, incremental, statusS3 };
  } finally {
    await sb.close();
    await rm(dir, { recursive: true, force: true });
  }
}

async function night(o: Opts, sb: SandboxProc, c: { dest: string; db: string; schools: number }): Promise<ScaleNight> {
  const before = await listFiles(c.dest);
  await sb.command({ cmd: 'reset' });
  const args: Omit<ChildArgs, 'resources'> = {
    apiUrl: sb.url,
    domains: sb.domains,
    token: sb.token,
    dest: c.dest,
    format: FORMAT,
    concurrency: CONCURRENCY,
  };
  const run = await runChild<ChildResult>('export-child.mjs', args, { nodeArgs: o.nodeArgs });
  if (run.status !== 'ok')
    throw new Error(`scale: the export of ${c.schools} schools ended ${run.status}: ${JSON.stringify(run.failures)}`);
  const requests = Number((await sb.command({ cmd: 'requests' })).requests);
  const after = await listFiles(c.dest);
  let dataFiles = 0;
  let dataBytes = 0;
  let manifestObjects = 0;
  let largestManifestBytes = 0;
  let stateFiles = 0;
  let stateBytes = 0;
  for (const [path, bytes] of after) {
    if (path.startsWith('_manifests/')) {
      manifestObjects++;
      largestManifestBytes = Math.max(largestManifestBytes, bytes);
    } else if (path.startsWith('_state/region=')) {
      stateFiles++;
      stateBytes += bytes;
    } else if (!path.startsWith('_') && !before.has(path)) {
      dataFiles++;
      dataBytes += bytes;
    }
  }
  const tasks = await taskCounts(c.dest, before);
  o.log(`scale: ${c.schools} schools: warehouse load`);
  const load = await command(o, ['warehouse', 'load', '--dest', c.dest, '--into', `duckdb:${c.db}`]);
  o.log(`scale: ${c.schools} schools: status`);
  const statusCmd = await command(o, ['status', '--dest', c.dest]);
  return {
    ms: run.ms,
    cpuMs: run.cpuMs,
    cpuPerSchoolMs: run.cpuMs / c.schools,
    maxRssMB: run.maxRssMB,
    status: run.status,
    failures: run.failures,
    requests,
    dataFiles,
    dataBytes,
    manifestObjects,
    largestManifestBytes,
    stateFiles,
    stateBytes,
    tasks,
    load,
    statusCmd,
  };
}

/**
 * `status --dest s3://...` over a copy of what status reads (`_state/`, `_manifests/`) in s3rver,
 * twice: first as copied (every state file a GetObject: a destination no run wrote a digest to
 * yet), then with the digest a run on S3 writes (src/manifest/state-digest.ts), built by the run's
 * own writer from the copied states and the versions s3rver gave them. A local destination has
 * no digest (its listing has no version tags), so the copy cannot carry one.
 */
async function statusOnS3(o: Opts, dest: string): Promise<StatusOnS3> {
  const store = await startS3rver();
  const sink = new S3Sink(store.bucket, 'scale', { endpoint: store.endpoint, region: 'us-east-1', credentials: S3RVER_CREDENTIALS });
  try {
    const read = [...(await listFiles(dest)).keys()].filter((p) => p.startsWith('_state/') || p.startsWith('_manifests/'));
    const states: WrittenState[] = [];
    const limit = pLimit(16);
    await Promise.all(
      read.map((p) =>
        limit(async () => {
          const body = await readFile(join(dest, p));
          // through the sink: the version it reports is the one its listing shows
          const version = await sink.writeAtomic(p, body);
          if (/^_state\/region=[^/]+\/school_id=[^/]+\.json$/.test(p)) states.push({ path: p, text: body.toString('utf8'), version });
        }),
      ),
    );
    const argv = ['status', '--dest', `s3://${store.bucket}/scale`, '--s3-endpoint', store.endpoint];
    const direct = await command(o, argv, S3RVER_ENV);
    const digest = (await StateDigestWriter.open(sink, newRunId()))!;
    for (const s of states) digest.add(s);
    await digest.commit();
    // the states the digest holds at the listed version: all of them, or the figure is not what it says
    const covered = (await DigestedStates.read(sink, await listStates(sink))).size;
    const withDigest = await command(o, argv, S3RVER_ENV);
    return { ...withDigest, objects: read.length, direct, states: states.length, covered };
  } finally {
    await sink.close();
    await store.close();
  }
}

/** Tasks of the run manifests the night added, by status (the manifest layout may change: parsed loosely). */
async function taskCounts(dest: string, before: Map<string, number>): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  const dir = join(dest, '_manifests');
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    if (!name.endsWith('.json') || before.has(`_manifests/${name}`)) continue;
    const text = await readFile(join(dir, name), 'utf8');
    const m = JSON.parse(text.split('\n')[0]!) as { tasks?: { status?: string }[]; summary?: { tasks?: Record<string, number> } };
    for (const t of m.tasks ?? []) out[t.status ?? '?'] = (out[t.status ?? '?'] ?? 0) + 1;
    for (const [k, n] of Object.entries(m.summary?.tasks ?? {})) out[k] = (out[k] ?? 0) + n;
  }
  return out;
}

/** Every file under dir (relative path, '/' separators) with its size. */
async function listFiles(dir: string, rel = '', out = new Map<string, number>()): Promise<Map<string, number>> {
  let entries;
  try {
    entries = await readdir(join(dir, rel), { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    const p = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) await listFiles(dir, p, out);
    else if (e.isFile()) out.set(p, (await stat(join(dir, p))).size);
  }
  return out;
}

/**
 * Runs `school-export <argv>` as a user would (bin/school-export.js: dist/ when fresh, else the
 * sources through tsx), in its own process; its peak RSS and CPU come from bench/rusage.mjs,
 * preloaded, which writes them when the process exits.
 */
async function command(o: Opts, argv: string[], env: Record<string, string> = {}): Promise<CommandCost> {
  const usageFile = join(o.work, `rusage-${process.pid}-${Date.now()}.json`);
  const t0 = performance.now();
  const child = spawn(
    process.execPath,
    ['--import', pathToFileURL(resolve(ROOT, 'bench/rusage.mjs')).href, resolve(ROOT, 'bin/school-export.js'), ...argv],
    {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true', ...env, BENCH_RUSAGE_FILE: usageFile },
    },
  );
  let lines = 0;
  let tail = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => {
    const text = tail + d.toString();
    const parts = text.split('\n');
    tail = parts.pop()!;
    lines += parts.length;
  });
  child.stderr!.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-4000)));
  const exitCode = await new Promise<number | null>((r) => child.once('close', (code) => r(code)));
  const ms = performance.now() - t0;
  if (tail) lines++;
  if (exitCode !== 0) o.log(`scale: school-export ${argv.join(' ')} exited ${exitCode}: ${err.trim().split('\n').pop()}`);
  const usage = JSON.parse(await readFile(usageFile, 'utf8').catch(() => '{}')) as { maxRssKB?: number; cpuUs?: number };
  await rm(usageFile, { force: true });
  return { ms, maxRssMB: (usage.maxRssKB ?? 0) / 1024, cpuMs: (usage.cpuUs ?? 0) / 1000, exitCode, lines };
}

// --- the table -------------------------------------------------------------------------------

const int = (n: number) => Math.round(n).toLocaleString('en-US');
const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MB`;
const kb = (bytes: number) => (bytes >= 2 ** 20 ? mb(bytes) : `${(bytes / 1024).toFixed(1)} KB`);
const verdict = (ok: boolean): Line['verdict'] => (ok ? 'pass' : 'FAIL');

/** Targets of issue 19 (incremental night unless said otherwise). */
export const SCALE_TARGETS = {
  cpuPerSchoolMs: 12,
  filesPerChangedPair: 1.1,
  manifestBytes: 2 ** 20,
  loadMs: 60_000,
  loadRssMB: 400,
  statusMs: 3_000,
  statusLines: 100,
};

export function scaleLines(r: ScaleResult | undefined): Line[] {
  if (!r) return [];
  const out: Line[] = [];
  const T = SCALE_TARGETS;
  for (const c of r.cases) {
    for (const which of ['full', 'incremental'] as const) {
      const n = c[which];
      const inc = which === 'incremental';
      const section = '8 scale';
      const what = `${int(c.schools)} schools, ${which} night`;
      const line = (measure: string, value: string, target = '', ok?: boolean) =>
        out.push({ section, measure: `${what}: ${measure}`, value, target, verdict: ok === undefined ? '' : verdict(ok) });
      const tasks = Object.entries(n.tasks)
        .map(([k, v]) => `${int(v)} ${k}`)
        .join(', ');
      line(
        'export wall (--format parquet --concurrency 16)',
        `${int(n.ms)} ms; peak RSS ${int(n.maxRssMB)} MB; tasks ${tasks || 'none listed'}`,
      );
      line(
        'export CPU per school',
        `${n.cpuPerSchoolMs.toFixed(1)} ms (${int(n.cpuMs)} ms in all)`,
        inc ? `<= ${T.cpuPerSchoolMs} ms` : '',
        inc ? n.cpuPerSchoolMs <= T.cpuPerSchoolMs : undefined,
      );
      line('requests', `${int(n.requests)} (${(n.requests / c.schools).toFixed(2)} per school)`);
      line(
        'data files and bytes written',
        inc
          ? `${int(n.dataFiles)} files, ${kb(n.dataBytes)}; ${(n.dataFiles / c.changedPairs).toFixed(2)}x the ${int(c.changedPairs)} changed (school, table) pairs`
          : `${int(n.dataFiles)} files, ${kb(n.dataBytes)}`,
        inc ? `<= ${T.filesPerChangedPair}x changed pairs` : '',
        inc ? n.dataFiles <= T.filesPerChangedPair * c.changedPairs : undefined,
      );
      line(
        'largest object under _manifests/',
        `${kb(n.largestManifestBytes)} (${int(n.manifestObjects)} objects)`,
        '<= 1 MB',
        n.largestManifestBytes <= T.manifestBytes,
      );
      line('state files', `${int(n.stateFiles)} files, ${kb(n.stateBytes)} (${int(n.stateBytes / Math.max(1, n.stateFiles))} bytes each)`);
      const loadOk = n.load.exitCode === 0 && n.load.maxRssMB <= T.loadRssMB && (!inc || n.load.ms <= T.loadMs);
      line(
        'warehouse load (DuckDB)',
        `${int(n.load.ms)} ms, peak RSS ${int(n.load.maxRssMB)} MB${n.load.exitCode === 0 ? '' : ` (exit ${n.load.exitCode})`}`,
        inc ? `<= ${T.loadMs / 1000} s, <= ${T.loadRssMB} MB` : `<= ${T.loadRssMB} MB`,
        loadOk,
      );
      const statusOk = n.statusCmd.exitCode === 0 && n.statusCmd.ms <= T.statusMs && n.statusCmd.lines <= T.statusLines;
      line(
        'status --dest (default output)',
        `${int(n.statusCmd.ms)} ms, ${int(n.statusCmd.lines)} lines${n.statusCmd.exitCode === 0 ? '' : ` (exit ${n.statusCmd.exitCode})`}`,
        inc ? `<= ${T.statusMs / 1000} s, <= ${T.statusLines} lines` : '',
        inc ? statusOk : undefined,
      );
    }
    const s3 = c.statusS3;
    if (!s3) continue; // a record from before this measurement
    const cost = (x: CommandCost) =>
      `${int(x.ms)} ms (CPU ${int(x.cpuMs)} ms), ${int(x.lines)} lines${x.exitCode === 0 ? '' : ` (exit ${x.exitCode})`}`;
    const where = `s3rver, local; _state/ and _manifests/ copied there, ${int(s3.objects)} objects`;
    if (s3.direct) {
      out.push({
        section: '8 scale',
        measure: `${int(c.schools)} schools, incremental night: status on S3 without a state digest (${where}: one GetObject a school)`,
        value: cost(s3.direct),
        target: '',
        verdict: '',
      });
    }
    out.push({
      section: '8 scale',
      measure: `${int(c.schools)} schools, incremental night: status on S3${s3.direct ? ` with the digest a run writes there (holding ${int(s3.covered ?? 0)} of the ${int(s3.states ?? 0)} states)` : ''} (${where})`,
      value: cost(s3),
      target: s3.direct ? `<= ${T.statusMs / 1000} s` : '',
      verdict: s3.direct ? verdict(s3.exitCode === 0 && s3.ms <= T.statusMs && s3.lines === c.incremental.statusCmd.lines) : '',
    });
  }
  return out;
}
