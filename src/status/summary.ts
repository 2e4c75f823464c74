import type { StatusReport, TaskStatus } from './collect.ts';

/**
 * What `status` says by default, whatever the number of schools: per table the schools it holds,
 * the oldest and median watermark lag, the schools failing and resuming; the worst (school, table)
 * pairs overall; the last runs and the lease come from the report as they are. A few dozen lines
 * at 10,000 schools; the detail is behind --schools, --table, --failing and --json.
 */
export interface TableSummary {
  type: 'table';
  table: string;
  schools: number;
  /** Schools whose table has no watermark yet (never committed). */
  never_committed: number;
  oldest_lag_seconds: number | null;
  median_lag_seconds: number | null;
  /** Schools whose latest attempt at this table failed (no later run committed it). */
  failing: number;
  /** Schools with a full read committed up to a checkpoint, which the next run resumes. */
  resuming: number;
}

export interface StatusSummary {
  tables: TableSummary[];
  /** The worst (school, table) pairs: failing first, then by lag (never committed counts as worst). */
  worst: TaskStatus[];
  schools: number;
}

export const WORST = 10;

export function summariseStatus(r: StatusReport, worst = WORST): StatusSummary {
  const byTable = new Map<string, TaskStatus[]>();
  for (const t of r.tasks) (byTable.get(t.resource) ?? byTable.set(t.resource, []).get(t.resource)!).push(t);
  const tables = [...byTable.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([table, tasks]) => tableSummary(table, tasks));
  return {
    tables,
    worst: worstTasks(r.tasks, worst),
    schools: new Set(r.tasks.map((t) => t.school_id)).size,
  };
}

function tableSummary(table: string, tasks: TaskStatus[]): TableSummary {
  const lags = tasks
    .map((t) => t.lag_seconds)
    .filter((l): l is number => l !== null)
    .sort((a, b) => a - b);
  return {
    type: 'table',
    table,
    schools: tasks.length,
    never_committed: tasks.filter((t) => t.watermark === null).length,
    oldest_lag_seconds: lags.length ? lags.at(-1)! : null,
    median_lag_seconds: lags.length ? median(lags) : null,
    failing: tasks.filter((t) => t.last_failure).length,
    resuming: tasks.filter((t) => t.checkpoint).length,
  };
}

/** The middle value of sorted numbers (the mean of the two middle ones for an even count), rounded. */
export function median(sorted: number[]): number {
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : Math.round((sorted[mid - 1]! + sorted[mid]!) / 2);
}

/** Failing before not failing, then the greatest lag (no watermark: greater than any), then by school and table. */
export function worstTasks(tasks: TaskStatus[], n: number): TaskStatus[] {
  // one pass keeping the n worst so far: 100,000 rows are not sorted to show ten
  const worst: TaskStatus[] = [];
  for (const t of tasks) {
    if (worst.length === n && compareWorst(t, worst[n - 1]!) >= 0) continue;
    let at = worst.length;
    while (at > 0 && compareWorst(t, worst[at - 1]!) < 0) at--;
    worst.splice(at, 0, t);
    if (worst.length > n) worst.pop();
  }
  return worst;
}

function compareWorst(a: TaskStatus, b: TaskStatus): number {
  const failing = (t: TaskStatus) => (t.last_failure ? 0 : 1);
  const lag = (t: TaskStatus) => (t.lag_seconds === null ? Infinity : t.lag_seconds);
  return (
    failing(a) - failing(b) ||
    (lag(a) === lag(b) ? 0 : lag(a) > lag(b) ? -1 : 1) ||
    a.school_id.localeCompare(b.school_id) ||
    a.resource.localeCompare(b.resource)
  );
}

/** The detail rows asked for: one table's, the failing ones, or all. */
export function selectTasks(tasks: TaskStatus[], o: { table?: string; failing?: boolean }): TaskStatus[] {
  return tasks.filter((t) => (o.table === undefined || t.resource === o.table) && (!o.failing || t.last_failure !== null));
}
