import { describePolicy } from '../privacy/policy.ts';
import type { ReportData, RunPoint } from './collect.ts';
import { barChart, bytes, compact, esc, inBytesUnit } from './svg.ts';

/**
 * The report as one self-contained HTML page: inline CSS and SVG, no script, nothing fetched
 * (a Content-Security-Policy says so to the browser), so it can be mailed, archived or opened
 * from a bucket as it is. Sections: volume per table, watermark lag per school, failures by
 * code, throughput and duration, the runs, the personal-data policy.
 */
export function renderReport(d: ReportData): string {
  const runLabels = d.runs.map(runLabel);
  const perTable = (pick: (r: RunPoint) => Record<string, number>, divisor = 1) =>
    d.tables.map((t) => ({ name: t, values: d.runs.map((r) => (pick(r)[t] ?? 0) / divisor) }));
  const size = inBytesUnit(d.runs.map((r) => r.total_bytes));
  const sections = [
    section(
      'Rows and bytes per table',
      `Rows and bytes written per run, by table, over the last ${d.runs.length} run${d.runs.length === 1 ? '' : 's'}.`,
      barChart({
        id: 'chart-rows',
        title: 'rows written per run',
        labels: runLabels,
        series: perTable((r) => r.rows),
        empty: 'no rows written',
      }) +
        barChart({
          id: 'chart-bytes',
          title: 'bytes written per run',
          labels: runLabels,
          series: perTable((r) => r.bytes, size.divisor),
          format: (v) => `${compact(v)} ${size.unit}`,
          empty: 'no bytes written',
        }),
    ),
    section(
      'Watermark lag per school',
      `How far behind the source each of the ${d.lag.schools.toLocaleString('en')} schools is (now - the watermark of its table furthest behind), at ${esc(d.generated_at)}.`,
      barChart({
        id: 'chart-lag',
        title: 'schools by watermark lag',
        labels: d.lag.bins.map((b) => b.label),
        series: [{ name: 'schools', values: d.lag.bins.map((b) => b.count) }],
        format: (v) => (Number.isInteger(v) ? v.toLocaleString('en') : ''),
        allLabels: true,
        valueLabels: true,
        empty: 'no state yet',
      }) + worstTable(d),
    ),
    section(
      'Failures by code',
      'Tasks that did not commit, per run, by error code.',
      barChart({
        id: 'chart-failures',
        title: 'unfinished tasks per run',
        labels: runLabels,
        series: d.codes.map((c) => ({ name: c, values: d.runs.map((r) => r.failures[c] ?? 0) })),
        format: (v) => (Number.isInteger(v) ? v.toLocaleString('en') : ''),
        legend: true,
        empty: 'no failures in these runs',
      }),
    ),
    section(
      'Throughput and duration',
      'Rows written per second of each run, and how long each run took.',
      barChart({
        id: 'chart-throughput',
        title: 'rows written per second',
        labels: runLabels,
        series: [{ name: 'rows/s', values: d.runs.map((r) => r.rows_per_second ?? 0) }],
      }) +
        barChart({
          id: 'chart-duration',
          title: 'run duration (seconds)',
          labels: runLabels,
          series: [{ name: 'seconds', values: d.runs.map((r) => r.duration_seconds ?? 0) }],
        }),
    ),
    section('Runs', '', runsTable(d)),
    section('Personal-data policy', `From ${esc(d.policy.source)}.`, policyBlock(d)),
  ];
  const problems = d.problems.length
    ? `<section><h2>Problems</h2><ul>${d.problems.map((p) => `<li>${esc(p)}</li>`).join('')}</ul></section>`
    : '';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>school-export report: ${esc(d.dest)}</title>
<style>${CSS}</style>
</head>
<body>
<header><h1>school-export report</h1><p>${esc(d.dest)} · generated ${esc(d.generated_at)} · ${d.runs.length} run${d.runs.length === 1 ? '' : 's'}</p></header>
${sections.join('\n')}
${problems}
</body>
</html>
`;
}

const CSS = `
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; margin: 24px; color: #222; background: #fff; max-width: 960px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 4px; border-bottom: 1px solid #ddd; }
header p, section > p { color: #555; margin: 4px 0 8px; }
svg.chart { display: block; margin: 8px 0 16px; background: #fff; }
svg .title { font-size: 13px; font-weight: 600; fill: #222; } svg .tick, svg .legend { font-size: 11px; fill: #444; }
svg .grid { stroke: #e6e6e6; } svg .axis { stroke: #888; } svg .empty { font-size: 13px; fill: #888; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 12px; } th, td { padding: 3px 8px; border-bottom: 1px solid #eee; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; } .bad { color: #b00020; }
`;

function section(title: string, lead: string, body: string): string {
  return `<section><h2>${esc(title)}</h2>${lead ? `<p>${lead}</p>` : ''}\n${body}\n</section>`;
}

/** "11-26 01:15" (the run's start, UTC), short enough to sit under a bar. */
function runLabel(r: RunPoint): string {
  const m = /^\d{4}-(\d{2})-(\d{2})T(\d{2}):(\d{2})/.exec(r.started_at ?? '');
  return m ? `${m[1]}-${m[2]} ${m[3]}:${m[4]}` : r.run_id.slice(0, 13);
}

export function humanLag(s: number | null): string {
  if (s === null) return 'never';
  if (s < 3600) return `${Math.round(s / 60)} min`;
  if (s < 2 * 86_400) return `${(s / 3600).toFixed(1)} h`;
  return `${(s / 86_400).toFixed(1)} d`;
}

function worstTable(d: ReportData): string {
  if (!d.lag.worst.length) return '';
  const rows = d.lag.worst
    .map(
      (s) =>
        `<tr><td>${esc(s.school_id)}</td><td>${esc(s.region)}</td><td>${esc(s.table)}</td><td class="n">${esc(humanLag(s.lag_seconds))}</td>` +
        `<td class="n${s.failing_tables ? ' bad' : ''}">${s.failing_tables}</td><td>${esc(s.last_failure ?? '')}</td></tr>`,
    )
    .join('\n');
  return `<p>The ${d.lag.worst.length} schools furthest behind (failing first):</p>
<table id="worst-schools"><thead><tr><th>school</th><th>region</th><th>table furthest behind</th><th>lag</th><th>failing tables</th><th>last failure</th></tr></thead>
<tbody>${rows}</tbody></table>`;
}

function runsTable(d: ReportData): string {
  if (!d.runs.length) return '<p>No run has finished here yet.</p>';
  const rows = [...d.runs]
    .reverse()
    .map((r) => {
      const failures = Object.values(r.failures).reduce((a, b) => a + b, 0);
      return (
        `<tr><td>${esc(r.run_id)}</td><td class="${r.status === 'ok' ? '' : 'bad'}">${esc(r.status)}</td><td>${esc(r.started_at ?? '')}</td>` +
        `<td class="n">${r.duration_seconds === null ? '' : r.duration_seconds.toFixed(1)}</td><td class="n">${r.tasks.toLocaleString('en')}</td>` +
        `<td class="n">${r.total_rows.toLocaleString('en')}</td><td class="n">${esc(bytes(r.total_bytes))}</td>` +
        `<td class="n">${r.rows_per_second === null ? '' : compact(r.rows_per_second)}</td><td class="n${failures ? ' bad' : ''}">${failures}</td></tr>`
      );
    })
    .join('\n');
  return `<table id="runs"><thead><tr><th>run</th><th>status</th><th>started (UTC)</th><th>seconds</th><th>tasks</th><th>rows</th><th>bytes</th><th>rows/s</th><th>unfinished</th></tr></thead>
<tbody>${rows}</tbody></table>`;
}

function policyBlock(d: ReportData): string {
  const p = d.policy.record;
  if (!p)
    return '<p id="policy">No personal-data policy recorded: nothing written yet, or every value kept as read by runs that predate the record.</p>';
  const cols = Object.entries(p.columns ?? {});
  return `<p id="policy">${esc(describePolicy(p))}</p>
<table><thead><tr><th>class</th><th>action</th></tr></thead><tbody>
<tr><td>person ids</td><td>${esc(p.person_id)}</td></tr>
<tr><td>direct identifiers</td><td>${esc(p.direct_identifier)}</td></tr>
<tr><td>free text</td><td>${esc(p.free_text)}</td></tr>
${cols.map(([c, a]) => `<tr><td>column ${esc(c)}</td><td>${esc(a)}</td></tr>`).join('\n')}
</tbody></table>${p.key_id ? `<p>Pseudonymisation key fingerprint: ${esc(p.key_id)} (never the key).</p>` : ''}`;
}
