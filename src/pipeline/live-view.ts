/**
 * The live display's text, as a pure function of what the run has done and the terminal's size,
 * so it is tested without a terminal. Every line fits the terminal (one column spare, so no
 * terminal wraps it and a redraw can move up exactly the lines it drew): school and table names
 * are shortened, numbers never; at narrow widths only the run's line is left, itself made
 * shorter field by field.
 */
export interface LiveTask {
  school: string;
  table: string;
  mode: 'full' | 'incremental';
  records: number;
  pages: number;
  /** Records the previous run of the same task read, when known: gives a percentage. */
  expected?: number;
}

export interface LiveView {
  done: number;
  total: number;
  /** Tasks that ended without committing (failed, skipped, interrupted): listed by the summary. */
  unfinished: number;
  recordsRead: number;
  rowsWritten: number;
  elapsedSeconds: number;
  etaSeconds?: number;
  active: LiveTask[];
}

export interface TermSize {
  columns: number;
  rows: number;
}

/** Below this many columns the display is the run's line alone. */
export const ONE_LINE_BELOW = 60;
const MAX_TASK_LINES = 12;

export function renderLive(v: LiveView, size: TermSize): string[] {
  const width = Math.max(1, size.columns - 1);
  const lines = [runLine(v, width)];
  if (size.columns < ONE_LINE_BELOW) return lines;
  const room = Math.min(MAX_TASK_LINES, Math.max(0, size.rows - 3));
  const shown = v.active.length > room ? v.active.slice(0, Math.max(0, room - 1)) : v.active;
  for (const t of shown) {
    const line = taskLine(t, width);
    if (line === undefined) break;
    lines.push(line);
  }
  const hidden = v.active.length - (lines.length - 1);
  if (hidden > 0 && room > 0) lines.push(cut(`  … and ${hidden.toLocaleString('en')} more active`, width));
  return lines;
}

interface Part {
  full: string;
  short: string;
  /** Lower is kept longer when the line must lose fields. */
  keep: number;
}

/** "31/60 tasks, 2 not finished, 132,905 records read, 450,905 rows written, 10,765 records/s, 1 min 12 s, ETA 2 min 5 s" */
export function runLine(v: LiveView, width: number): string {
  const rate = v.elapsedSeconds > 0 ? Math.round(v.recordsRead / v.elapsedSeconds) : 0;
  const parts: Part[] = [
    { full: `${n(v.done)}/${n(v.total)} tasks`, short: `${n(v.done)}/${n(v.total)}`, keep: 0 },
    ...(v.unfinished ? [{ full: `${n(v.unfinished)} not finished`, short: `${n(v.unfinished)} unfinished`, keep: 4.5 }] : []),
    { full: `${n(v.recordsRead)} records read`, short: `${n(v.recordsRead)} read`, keep: 2 },
    { full: `${n(v.rowsWritten)} rows written`, short: `${n(v.rowsWritten)} written`, keep: 2.5 },
    { full: `${n(rate)} records/s`, short: `${n(rate)}/s`, keep: 3 },
    { full: clock(v.elapsedSeconds), short: compactClock(v.elapsedSeconds), keep: 6 },
    ...(v.etaSeconds !== undefined ? [{ full: `ETA ${clock(v.etaSeconds)}`, short: `ETA ${compactClock(v.etaSeconds)}`, keep: 1 }] : []),
  ];
  // least important first: each part takes its short form, then parts go, until the line fits
  const byKeep = [...parts].sort((x, y) => y.keep - x.keep);
  const short = new Set<Part>();
  let kept = parts;
  const text = () => kept.map((p) => (short.has(p) ? p.short : p.full)).join(', ');
  for (const p of byKeep) {
    if (text().length <= width) return text();
    if (p.keep > 0) short.add(p); // "31/60 tasks" keeps its word while anything else is left
  }
  for (const p of byKeep) {
    if (text().length <= width || kept.length === 1) break;
    kept = kept.filter((k) => k !== p);
  }
  return cut(text(), width);
}

/** "  A1001 achievements   full    12,345 rec    123 pg  45%" (names shortened to fit; undefined when they cannot). */
export function taskLine(t: LiveTask, width: number): string | undefined {
  const pct = t.expected ? `${Math.min(99, Math.floor((t.records / t.expected) * 100))}%` : '';
  const right = `${t.mode === 'full' ? 'full' : 'incr'} ${n(t.records).padStart(9)} rec ${n(t.pages).padStart(5)} pg ${pct.padStart(4)}`;
  const nameWidth = width - 3 - right.length;
  if (nameWidth < 8) return undefined;
  return `  ${fitName(t.school, t.table, nameWidth).padEnd(nameWidth)} ${right}`.trimEnd();
}

/** "A1001 achievements" in `width` columns: each name shortened with an ellipsis, the school's to half at most. */
export function fitName(school: string, table: string, width: number): string {
  if (school.length + 1 + table.length <= width) return `${school} ${table}`;
  const schoolWidth = Math.min(school.length, Math.max(1, Math.ceil((width - 1) / 2)), width - 2);
  const s = cut(school, schoolWidth);
  return `${s} ${cut(table, width - 1 - s.length)}`;
}

/** At most `width` characters; a shortened text ends in an ellipsis. */
export function cut(s: string, width: number): string {
  if (s.length <= width) return s;
  return width <= 1 ? s.slice(0, width) : s.slice(0, width - 1) + '…';
}

const n = (x: number) => x.toLocaleString('en');

/** "0.4 s", "12 s", "1 min 12 s", "2 h 5 min" */
export function clock(seconds: number): string {
  const s = Math.round(seconds);
  if (seconds < 10) return `${seconds.toFixed(1)} s`;
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** "12s", "1m12s", "2h05m" */
export function compactClock(seconds: number): string {
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}
