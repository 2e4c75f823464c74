import pLimit from 'p-limit';
import { listRuns, readRun, type RunDocs } from '../manifest/layout.ts';
import type { Manifest, PersonalDataRecord } from '../manifest/types.ts';
import type { Sink } from '../sink/types.ts';
import { collectStatus, readJson, type StatusReport, type TaskStatus } from '../status/collect.ts';

/**
 * What `school-export report` draws, read from the destination only (manifests, state, the
 * destination's record): per run the rows and bytes per table, failures by code, throughput and
 * duration; per school the watermark lag (from status: one source for what "failing" and "lag"
 * mean); the personal-data policy. Everything is aggregated here, so the page's size follows the
 * number of runs and tables, not the number of schools.
 */
export interface RunPoint {
  run_id: string;
  status: string;
  started_at: string | null;
  duration_seconds: number | null;
  tasks: number;
  rows: Record<string, number>;
  bytes: Record<string, number>;
  /** Tasks that did not commit, by error code. */
  failures: Record<string, number>;
  total_rows: number;
  total_bytes: number;
  /** Rows written per second of the run (null: no duration). */
  rows_per_second: number | null;
  megabytes_per_second: number | null;
}

export interface SchoolLag {
  school_id: string;
  region: string;
  /** The table furthest behind, and by how much (null: no table of the school ever committed). */
  table: string;
  lag_seconds: number | null;
  failing_tables: number;
  last_failure: string | null;
}

export interface ReportData {
  dest: string;
  generated_at: string;
  /** Oldest first, as the charts read left to right. */
  runs: RunPoint[];
  tables: string[];
  codes: string[];
  lag: { bins: { label: string; count: number }[]; schools: number; worst: SchoolLag[] };
  policy: { record: PersonalDataRecord | null; source: string };
  problems: string[];
}

/** Upper bounds (seconds) of the lag histogram's bins; then "more", then "never". */
export const LAG_BINS: [number, string][] = [
  [3600, '< 1 h'],
  [3 * 3600, '1-3 h'],
  [6 * 3600, '3-6 h'],
  [12 * 3600, '6-12 h'],
  [86_400, '12-24 h'],
  [2 * 86_400, '1-2 d'],
  [3 * 86_400, '2-3 d'],
  [7 * 86_400, '3-7 d'],
  [30 * 86_400, '7-30 d'],
];
export const WORST_SCHOOLS = 25;
const DESTINATION_RECORD = '_state/_destination.json';

export async function collectReport(sink: Sink, o: { runs: number; now?: Date }): Promise<ReportData> {
  const now = o.now ?? new Date();
  const status = await collectStatus(sink, { runs: Math.min(o.runs, 10), now });
  const problems = [...status.problems];
  // finished runs (those with a run manifest), newest last
  const finished = (await listRuns(sink)).filter((r) => r.manifest).slice(-o.runs);
  const limit = pLimit(4); // a run may have several parts: a few runs at a time
  const manifests = await Promise.all(finished.map((r) => limit(() => readWhole(sink, r, problems))));
  const runs = manifests.filter((m): m is Manifest => m !== undefined).map(runPoint);
  const tables = [...new Set(runs.flatMap((r) => Object.keys(r.rows)))].sort();
  const codes = [...new Set(runs.flatMap((r) => Object.keys(r.failures)))].sort();
  const latest = manifests.filter((m) => m !== undefined).at(-1);
  return {
    dest: sink.url,
    generated_at: now.toISOString(),
    runs,
    tables,
    codes,
    lag: lagOf(status),
    policy: await policyOf(sink, latest, problems),
    problems,
  };
}

/** A finished run as one manifest (src/manifest/layout.ts reads it, whichever layout wrote it). */
async function readWhole(sink: Sink, run: RunDocs, problems: string[]): Promise<Manifest | undefined> {
  try {
    const r = await readRun(sink, run);
    if (!r.header) return undefined;
    return { ...r.header, version: 1, tasks: r.tasks, deletions: r.deletions } as Manifest;
  } catch (e) {
    problems.push(`${run.manifest?.path ?? run.runId}: unreadable (${(e as Error).message})`);
    return undefined;
  }
}

function runPoint(m: Manifest): RunPoint {
  const rows: Record<string, number> = {};
  const bytes: Record<string, number> = {};
  const failures: Record<string, number> = {};
  const keys = new Set<string>();
  for (const t of m.tasks) {
    keys.add(`${t.school_id}\u0000${t.resource}`);
    for (const [table, n] of Object.entries(t.rows ?? {})) rows[table] = (rows[table] ?? 0) + n;
    for (const f of t.files ?? []) bytes[f.table] = (bytes[f.table] ?? 0) + f.bytes;
    if (t.error && t.status !== 'committed') failures[t.error.code] = (failures[t.error.code] ?? 0) + 1;
  }
  const started = Date.parse(m.started_at);
  const finished = Date.parse(m.finished_at);
  const duration = Number.isNaN(started) || Number.isNaN(finished) ? null : Math.max(0, (finished - started) / 1000);
  const totalRows = Object.values(rows).reduce((a, b) => a + b, 0);
  const totalBytes = Object.values(bytes).reduce((a, b) => a + b, 0);
  return {
    run_id: m.run_id,
    status: m.status,
    started_at: m.started_at ?? null,
    duration_seconds: duration,
    tasks: keys.size,
    rows,
    bytes,
    failures,
    total_rows: totalRows,
    total_bytes: totalBytes,
    rows_per_second: duration ? Math.round(totalRows / duration) : null,
    megabytes_per_second: duration ? +(totalBytes / 2 ** 20 / duration).toFixed(2) : null,
  };
}

/** Per school, its table furthest behind; binned, and the worst schools (failing first, then by lag). */
export function lagOf(status: Pick<StatusReport, 'tasks'>): ReportData['lag'] {
  const bySchool = new Map<string, TaskStatus[]>();
  for (const t of status.tasks) (bySchool.get(t.school_id) ?? bySchool.set(t.school_id, []).get(t.school_id)!).push(t);
  const schools: SchoolLag[] = [...bySchool.values()].map((tasks) => {
    const known = tasks.filter((t) => t.lag_seconds !== null);
    const worst = known.length ? known.reduce((a, b) => (b.lag_seconds! > a.lag_seconds! ? b : a)) : tasks[0]!;
    const failing = tasks.filter((t) => t.last_failure);
    return {
      school_id: worst.school_id,
      region: worst.region,
      table: worst.resource,
      lag_seconds: known.length ? worst.lag_seconds : null,
      failing_tables: failing.length,
      last_failure: failing[0]?.last_failure ? (failing[0].last_failure.code ?? failing[0].last_failure.status) : null,
    };
  });
  const counts = new Array<number>(LAG_BINS.length + 2).fill(0);
  for (const s of schools) {
    const i = s.lag_seconds === null ? LAG_BINS.length + 1 : LAG_BINS.findIndex(([max]) => s.lag_seconds! < max);
    counts[i === -1 ? LAG_BINS.length : i]! += 1;
  }
  const labels = [...LAG_BINS.map(([, l]) => l), '> 30 d', 'never'];
  const rank = (s: SchoolLag) => (s.lag_seconds === null ? Infinity : s.lag_seconds);
  const worst = [...schools]
    .sort((a, b) => (b.failing_tables ? 1 : 0) - (a.failing_tables ? 1 : 0) || rank(b) - rank(a) || a.school_id.localeCompare(b.school_id))
    .slice(0, WORST_SCHOOLS);
  return { bins: labels.map((label, i) => ({ label, count: counts[i]! })), schools: schools.length, worst };
}

/** The policy the destination keeps (its record), else the one its latest run applied. */
async function policyOf(sink: Sink, latest: Manifest | undefined, problems: string[]): Promise<ReportData['policy']> {
  const record = await readJson<{ personal_data?: PersonalDataRecord }>(sink, DESTINATION_RECORD, problems);
  if (record?.personal_data?.person_id) return { record: record.personal_data, source: `the destination's record (${DESTINATION_RECORD})` };
  if (latest) return { record: latest.personal_data ?? null, source: `the latest run's manifest (${latest.run_id})` };
  return { record: null, source: 'no run yet' };
}
