import type { StatusReport } from './collect.ts';
import { policyStatusLines } from '../privacy/status.ts';

/** `status` output: NDJSON lines (one object per task, run, deactivated school and lock), or tables for a terminal. */

export function statusLines(r: StatusReport): string[] {
  return [
    ...(r.personal_data ? [r.personal_data] : []),
    ...r.locks,
    ...r.runs,
    ...r.tasks,
    ...r.deactivated,
    ...r.problems.map((p) => ({ type: 'problem', message: p })),
  ].map((o) => JSON.stringify(o));
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

function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n');
}

// a value read from a file must not move the cursor or recolour the terminal
const safe = (s: string | null | undefined) => (s ?? '-').replace(/[\u0000-\u001f\u007f-\u009f]/g, '\uFFFD');
const short = (iso: string | null) => (iso ? safe(iso.replace(/\.\d+Z$/, 'Z')) : '-');

export function renderStatus(r: StatusReport): string {
  const out: string[] = [`destination ${safe(r.dest)}`];
  if (r.personal_data) out.push(...policyStatusLines(r.personal_data).map(safe));
  if (r.locks.length) {
    out.push(
      '',
      r.locks.some((l) => !l.stale) ? 'RUN IN PROGRESS (lease held)' : 'LEASE LEFT BY A RUN THAT DIED (the next run takes it over)',
    );
    out.push(
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
    );
  } else out.push('no run in progress');
  out.push('', `LAST ${r.runs.length} RUN${r.runs.length === 1 ? '' : 'S'}`);
  out.push(
    r.runs.length
      ? table(
          ['run', 'status', 'started', 'duration', 'tasks', 'rows', 'failures'],
          r.runs.map((x) => [
            safe(x.run_id),
            safe(x.status),
            short(x.started_at),
            humanDuration(x.duration_seconds),
            String(x.tasks),
            x.rows.toLocaleString('en'),
            String(x.failures),
          ]),
        )
      : '(none yet)',
  );
  out.push('', 'SCHOOLS AND TABLES');
  out.push(
    r.tasks.length
      ? table(
          ['school', 'region', 'table', 'watermark', 'lag', 'last run', 'last full', 'resumes at', 'last failure'],
          r.tasks.map((t) => [
            safe(t.school_id),
            safe(t.region),
            safe(t.resource),
            short(t.watermark),
            humanDuration(t.lag_seconds),
            safe(t.last_run_id || '-'),
            short(t.last_full_at),
            t.checkpoint ? `${t.checkpoint.pages} pages` : '-',
            t.last_failure ? safe(`${t.last_failure.code ?? t.last_failure.status} in ${t.last_failure.run_id}`) : '-',
          ]),
        )
      : '(no state yet: nothing exported to this destination)',
  );
  if (r.deactivated.length) {
    out.push('', 'DEACTIVATED BY WEBHOOKS (skipped by runs)');
    out.push(
      table(
        ['school', 'reason', 'event', 'at'],
        r.deactivated.map((d) => [safe(d.school_id), safe(d.reason), safe(d.event), short(d.at)]),
      ),
    );
  }
  for (const p of r.problems) out.push(`problem: ${safe(p)}`);
  return out.join('\n') + '\n';
}
