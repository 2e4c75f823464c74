import type { StatusReport, TaskStatus } from './collect.ts';
import type { StatusSummary } from './summary.ts';
import { policyStatusLines } from '../privacy/status.ts';

/**
 * `status` output: NDJSON lines (one object per lease, run, table summary, task, deactivated
 * school and problem) with --json; otherwise text: by default a summary of a few dozen lines
 * whatever the number of schools, or with --schools / --table / --failing the (school, table) rows
 * asked for.
 */

/** Text other parts keep in the destination and show in `status` (the webhook receiver's queue). */
export interface StatusSection {
  text: string;
  json: object;
}

export function statusLines(
  r: StatusReport,
  o: { summary?: StatusSummary; tasks?: TaskStatus[]; sections?: StatusSection[] } = {},
): string[] {
  return [
    ...(r.personal_data ? [r.personal_data] : []),
    ...r.locks,
    ...r.runs,
    ...(o.summary?.tables ?? []),
    ...(o.tasks ?? r.tasks),
    ...r.deactivated,
    ...(o.sections ?? []).map((s) => s.json),
    ...r.problems.map((p) => ({ type: 'problem', message: p })),
  ].map((x) => JSON.stringify(x));
}

/** "3d 4h", "2h 05m", "42s" */
export function humanDuration(seconds: number | null): string {
  if (seconds === null) return '-';
  if (seconds < 60) return `${seconds}s`;
  const m = Math.floor(seconds / 60);
  if (m < 60) return `${m}m ${String(seconds % 60).padStart(2, '0')}s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h ${String(m % 60).padStart(2, '0')}m`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}

function table(headers: string[], rows: string[][], right: number[] = []): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (right.includes(i) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n');
}

// a value read from a file must not move the cursor or recolour the terminal
const safe = (s: string | null | undefined) => (s ?? '-').replace(/[\u0000-\u001f\u007f-\u009f]/g, '\uFFFD');
const short = (iso: string | null) => (iso ? safe(iso.replace(/\.\d+Z$/, 'Z')) : '-');
const n = (x: number) => x.toLocaleString('en');
const failure = (t: TaskStatus) =>
  t.last_failure ? safe(`${t.last_failure.code ?? t.last_failure.status} in ${t.last_failure.run_id}`) : '-';

/** At most this many problems and deactivated schools are listed one per line. */
const LISTED = 10;

export function renderStatus(
  r: StatusReport,
  o: { summary?: StatusSummary; tasks?: TaskStatus[]; sections?: StatusSection[]; heading?: string } = {},
): string {
  const out: string[] = [`destination ${safe(r.dest)}`];
  if (r.personal_data) out.push(...policyStatusLines(r.personal_data).map(safe));
  out.push(...leaseLines(r), '', ...runLines(r));
  if (o.summary) out.push('', ...summaryLines(o.summary, r));
  if (o.tasks) out.push('', ...taskLines(o.tasks, o.heading ?? 'SCHOOLS AND TABLES', r.tasks.length === 0));
  out.push(...deactivatedLines(r));
  for (const s of o.sections ?? []) out.push('', s.text.trimEnd());
  for (const p of r.problems.slice(0, LISTED)) out.push(`problem: ${safe(p)}`);
  if (r.problems.length > LISTED) out.push(`... and ${n(r.problems.length - LISTED)} more problems (all of them with --json)`);
  return out.join('\n') + '\n';
}

function leaseLines(r: StatusReport): string[] {
  if (!r.locks.length) return ['no run in progress'];
  return [
    '',
    r.locks.some((l) => !l.stale) ? 'RUN IN PROGRESS (lease held)' : 'LEASE LEFT BY A RUN THAT DIED (the next run takes it over)',
    table(
      ['lease', 'run', 'host', 'pid', 'started', 'heartbeat age', 'state'],
      r.locks.map((l) => [
        safe(l.file),
        safe(l.run_id),
        safe(l.host),
        String(l.pid),
        short(l.started_at),
        humanDuration(l.heartbeat_age_seconds),
        l.stale ? 'stale' : 'live',
      ]),
    ),
  ];
}

function runLines(r: StatusReport): string[] {
  const head = `LAST ${r.runs.length} RUN${r.runs.length === 1 ? '' : 'S'}`;
  if (!r.runs.length) return [head, '(none yet)'];
  return [
    head,
    table(
      ['run', 'status', 'started', 'duration', 'tasks', 'unchanged', 'rows', 'failures'],
      r.runs.map((x) => [
        safe(x.run_id),
        safe(x.status),
        short(x.started_at),
        humanDuration(x.duration_seconds),
        n(x.tasks),
        n(x.unchanged),
        n(x.rows),
        n(x.failures),
      ]),
      [4, 5, 6, 7],
    ),
  ];
}

function summaryLines(s: StatusSummary, r: StatusReport): string[] {
  if (!s.tables.length) return ['TABLES', '(no state yet: nothing exported to this destination)'];
  const out = [
    `TABLES (${n(s.schools)} school${s.schools === 1 ? '' : 's'}; lag = now - watermark: how far behind the source a table can be)`,
    table(
      ['table', 'schools', 'oldest lag', 'median lag', 'never committed', 'failing', 'resuming'],
      s.tables.map((t) => [
        safe(t.table),
        n(t.schools),
        humanDuration(t.oldest_lag_seconds),
        humanDuration(t.median_lag_seconds),
        n(t.never_committed),
        n(t.failing),
        n(t.resuming),
      ]),
      [1, 2, 3, 4, 5, 6],
    ),
  ];
  if (s.worst.length) {
    out.push(
      '',
      `WORST ${s.worst.length} (failing first, then by lag; all with --schools, one table with --table NAME, failing with --failing)`,
    );
    out.push(...taskTable(s.worst).split('\n'));
  }
  if (r.tasks.length === 0) out.push('(no state yet: nothing exported to this destination)');
  return out;
}

function taskTable(tasks: TaskStatus[]): string {
  return table(
    ['school', 'region', 'table', 'watermark', 'lag', 'last run', 'last full', 'resumes at', 'last failure'],
    tasks.map((t) => [
      safe(t.school_id),
      safe(t.region),
      safe(t.resource),
      short(t.watermark),
      humanDuration(t.lag_seconds),
      safe(t.last_run_id || '-'),
      short(t.last_full_at),
      t.checkpoint ? `${t.checkpoint.pages} pages` : '-',
      failure(t),
    ]),
  );
}

function taskLines(tasks: TaskStatus[], heading: string, empty: boolean): string[] {
  if (empty) return [heading, '(no state yet: nothing exported to this destination)'];
  return [heading, tasks.length ? taskTable(tasks) : '(none)'];
}

function deactivatedLines(r: StatusReport): string[] {
  if (!r.deactivated.length) return [];
  const head = `DEACTIVATED BY WEBHOOKS (skipped by runs): ${n(r.deactivated.length)} school${r.deactivated.length === 1 ? '' : 's'}`;
  const shown = r.deactivated.slice(0, LISTED);
  const rows = table(
    ['school', 'reason', 'event', 'at'],
    shown.map((d) => [safe(d.school_id), safe(d.reason), safe(d.event), short(d.at)]),
  );
  const more = r.deactivated.length > LISTED ? [`... and ${n(r.deactivated.length - LISTED)} more (all of them with --json)`] : [];
  return ['', head, rows, ...more];
}
