import pLimit from 'p-limit';
import { byRun, listDocs, readHeader, runTasks, runTotalsSize, type DocHeader, type RunDocs } from '../manifest/layout.ts';
import { isStale, readLeases } from '../manifest/lease.ts';
import { DigestedStates } from '../manifest/state-digest.ts';
import { DIRECTIVES_PREFIX, listStates, readState, type ListedState } from '../manifest/state-store.ts';
import type { ManifestTask, RunManifest, SchoolDirective } from '../manifest/types.ts';
import type { Sink } from '../sink/types.ts';
import { policyStatus, type PolicyStatus } from '../privacy/status.ts';

/**
 * What a destination holds, read from its own files only (state, directives, manifests, leases):
 * no API request, so it works from anywhere that can read the destination, while a run is going.
 */

export interface TaskStatus {
  type: 'task';
  school_id: string;
  region: string;
  resource: string;
  watermark: string | null;
  /** now − watermark, in seconds: how far behind the source this table can be. */
  lag_seconds: number | null;
  last_run_id: string | null;
  last_full_at: string | null;
  /** A full read committed up to a checkpoint, which the next run resumes. */
  checkpoint: { pages: number; rows: number; started_at: string } | null;
  /** The latest failure of this task among the runs read, when no later run committed it. */
  last_failure: { run_id: string; status: string; code?: string; message?: string } | null;
}

export interface RunStatus {
  type: 'run';
  run_id: string;
  /** ok | partial | failed | interrupted from the run manifest; running (lease held) or incomplete (killed: parts only) otherwise. */
  status: string;
  started_at: string | null;
  finished_at: string | null;
  duration_seconds: number | null;
  shard: string | null;
  tasks: number;
  /** Full reads whose content equalled the last committed version: no file written. */
  unchanged: number;
  rows: number;
  failures: number;
}

export interface DeactivatedSchool {
  type: 'deactivated';
  school_id: string;
  reason: string;
  event: string;
  at: string;
}

export interface LockStatus {
  type: 'lock';
  file: string;
  run_id: string;
  host: string;
  pid: number;
  started_at: string;
  heartbeat_at: string;
  heartbeat_age_seconds: number | null;
  /** the heartbeat is too old, or the process is gone from this host: no run holds it any more */
  stale: boolean;
}

export interface StatusReport {
  dest: string;
  tasks: TaskStatus[];
  runs: RunStatus[];
  deactivated: DeactivatedSchool[];
  locks: LockStatus[];
  /** The personal-data policy and format the destination keeps, and what is left of a weaker policy. */
  personal_data?: PolicyStatus;
  /** Files that could not be read, each named with why: shown, never fatal. */
  problems: string[];
}

const secondsBetween = (later: Date, iso: string | null | undefined): number | null => {
  if (!iso) return null;
  const t = Date.parse(iso);
  return Number.isNaN(t) ? null : Math.max(0, Math.round((later.getTime() - t) / 1000));
};

/** A JSON file of the destination; unreadable is a problem to report, not a failure of the whole view. */
export async function readJson<T>(sink: Sink, path: string, problems: string[]): Promise<T | undefined> {
  try {
    const buf = await sink.read(path);
    return buf ? (JSON.parse(buf.toString('utf8')) as T) : undefined;
  } catch (e) {
    problems.push(`${path}: unreadable (${(e as Error).message})`);
    return undefined;
  }
}

/** Runs by id, newest first (src/manifest/layout.ts knows where their documents are). */
async function runIds(sink: Sink): Promise<RunDocs[]> {
  return byRun(await listDocs(sink)).reverse();
}

/** A run's entries: those its manifest or parts list (read part by part). */
async function entriesOf(sink: Sink, run: RunDocs, problems: string[]): Promise<ManifestTask[]> {
  const out: ManifestTask[] = [];
  try {
    for await (const tasks of runTasks(sink, run)) out.push(...tasks);
  } catch (e) {
    problems.push(`${run.manifest?.path ?? `_manifests/${run.runId}/`}: unreadable (${(e as Error).message})`);
  }
  return out;
}

function runStatus(id: string, m: DocHeader | RunManifest | undefined, partTasks: ManifestTask[], running: boolean, now: Date): RunStatus {
  const totals = m && 'summary' in m ? m.summary : undefined;
  const size = totals ? runTotalsSize(totals) : undefined;
  const tasks = partTasks;
  const status = m?.status && m.status !== 'running' ? m.status : running ? 'running' : 'incomplete';
  const finished = m?.finished_at ?? null;
  const started = m?.started_at ?? null;
  return {
    type: 'run',
    run_id: id,
    status,
    started_at: started,
    finished_at: finished,
    duration_seconds: started ? secondsBetween(finished ? new Date(finished) : now, started) : null,
    shard: m?.shard ? `${m.shard.index}/${m.shard.count}` : (/-s(\d+)of(\d+)$/.exec(id)?.slice(1).join('/') ?? null),
    tasks: size ? size.tasks : tasks.length,
    unchanged: totals ? (totals.tasks.unchanged ?? 0) : tasks.filter((t) => t.status === 'unchanged').length,
    rows: size ? size.rows : tasks.reduce((n, t) => n + Object.values(t.rows ?? {}).reduce((a, b) => a + b, 0), 0),
    failures: totals
      ? (totals.tasks.failed ?? 0) + (totals.tasks.interrupted ?? 0)
      : tasks.filter((t) => t.status === 'failed' || t.status === 'interrupted').length,
  };
}

export interface CollectOptions {
  now?: Date;
  /** how many of the latest runs to list (default 10) */
  runs?: number;
  /** after each school's state file is read (on S3 one request each: minutes at thousands of schools) */
  onStateRead?: (read: number, total: number) => void;
}

export async function collectStatus(sink: Sink, o: CollectOptions = {}): Promise<StatusReport> {
  const now = o.now ?? new Date();
  const problems: string[] = [];
  const limit = pLimit(16); // S3 GETs are independent: a few in flight, not thousands

  // leases only (takeover markers are not), each said live or stale: a run killed with its lease
  // held is not in progress, and the next run takes the lease over
  const locks: LockStatus[] = (await readLeases(sink)).map((l) => ({
    type: 'lock',
    ...l,
    heartbeat_age_seconds: secondsBetween(now, l.heartbeat_at),
    stale: isStale(l, now),
  }));
  const lockedRuns = new Set(locks.filter((l) => !l.stale).map((l) => l.run_id));

  // the latest N runs: their manifests (or, for a run without one, its parts)
  const recent = (await runIds(sink)).slice(0, o.runs ?? 10);
  const runDocs = await Promise.all(
    recent.map((r) =>
      limit(async () => {
        let final: DocHeader | RunManifest | undefined;
        try {
          final = r.manifest ? await readHeader(sink, r.manifest) : undefined;
        } catch (e) {
          problems.push(`${r.manifest!.path}: unreadable (${(e as Error).message})`);
        }
        // A finished run without failures lists only tasks that committed, which their state
        // says (last_run_id, see attachFailures): its parts need not be read. At 10,000 schools
        // that is 100,000 entries a night, most of the time status took.
        const clean = final && 'summary' in final && final.summary.failures_total === 0;
        return { id: r.runId, final, tasks: clean ? [] : await entriesOf(sink, r, problems) };
      }),
    ),
  );
  const runs = runDocs.map((r) => runStatus(r.id, r.final, r.tasks, lockedRuns.has(r.id), now));

  const held = await listStates(sink);
  // on S3, the runs' digests hold most states at their current version: only the others are read
  const digested = await DigestedStates.read(sink, held, (p) => problems.push(p));
  let read = 0;
  const fromFile = (s: ListedState) =>
    limit(async () => {
      try {
        return await readState(sink, s.region, s.schoolId);
      } catch (e) {
        problems.push((e as Error).message);
        return undefined;
      } finally {
        o.onStateRead?.(++read, held.length);
      }
    });
  const states = await Promise.all(
    held.map((s) => {
      const copy = digested.take(s);
      if (!copy) return fromFile(s);
      o.onStateRead?.(++read, held.length);
      return Promise.resolve(copy);
    }),
  );
  const tasks: TaskStatus[] = [];
  for (const st of states) {
    if (!st) continue;
    for (const [resource, r] of Object.entries(st.resources).sort(([a], [b]) => a.localeCompare(b))) {
      tasks.push({
        type: 'task',
        school_id: st.school_id,
        region: st.region,
        resource,
        watermark: r.watermark,
        lag_seconds: secondsBetween(now, r.watermark),
        last_run_id: r.last_run_id,
        last_full_at: r.last_full_at,
        checkpoint: r.checkpoint ? { pages: r.checkpoint.pages, rows: r.checkpoint.rows, started_at: r.checkpoint.started_at } : null,
        last_failure: null,
      });
    }
  }
  attachFailures(tasks, runDocs);
  const personal = await policyStatus(
    sink,
    states.filter((s) => s !== undefined),
  ).catch((e: unknown) => void problems.push((e as Error).message));

  // a directive per school the receiver ever heard of: read like the states, a few at a time
  const directives = await Promise.all(
    (await sink.list(DIRECTIVES_PREFIX)).map((p) => limit(() => readJson<SchoolDirective>(sink, p, problems))),
  );
  const deactivated: DeactivatedSchool[] = [];
  for (const d of directives) if (d?.deactivated) deactivated.push({ type: 'deactivated', school_id: d.school_id, ...d.deactivated });
  return { dest: sink.url, tasks, runs, deactivated, locks, ...(personal ? { personal_data: personal } : {}), problems };
}

/**
 * A failure counts while no later run committed the task. Runs newest first: the first entry met
 * for a (school, resource) decides, and a state committed by a later run (last_run_id: run ids
 * sort by time) overrules it, which covers the runs whose entries were not read (no failures).
 * A failed task never wrote state, so a school whose every task failed has no state file: it
 * gets a row of its own.
 */
function attachFailures(tasks: TaskStatus[], runs: { id: string; tasks: ManifestTask[] }[]): void {
  const byKey = new Map(tasks.map((t) => [`${t.school_id}|${t.resource}`, t]));
  const decided = new Set<string>();
  for (const run of runs) {
    for (const t of run.tasks) {
      const key = `${t.school_id}|${t.resource}`;
      if (decided.has(key)) continue;
      decided.add(key);
      if (t.status !== 'failed' && t.status !== 'interrupted') continue;
      const failure = { run_id: run.id, status: t.status, ...(t.error ? { code: t.error.code, message: t.error.message } : {}) };
      const row = byKey.get(key);
      if (row?.last_run_id && row.last_run_id > run.id) continue;
      if (row) row.last_failure = failure;
      else {
        const fresh: TaskStatus = {
          type: 'task',
          school_id: t.school_id,
          region: t.region,
          resource: t.resource,
          watermark: null,
          lag_seconds: null,
          last_run_id: null,
          last_full_at: null,
          checkpoint: null,
          last_failure: failure,
        };
        byKey.set(key, fresh);
        tasks.push(fresh);
      }
    }
  }
}
