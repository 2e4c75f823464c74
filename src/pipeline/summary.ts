import type { Manifest, ManifestTask } from '../manifest/types.ts';
import { formatElapsed } from './progress.ts';
import { describePolicy } from '../privacy/policy.ts';
import { fieldLines, matchLines, type FieldAction } from '../privacy/report.ts';
import { failureLines } from './summary-failures.ts';
import { taskKey, type RunTally } from './run-tally.ts';

export interface TableTotals {
  rows: number;
  files: number;
  bytes: number;
  /** lone UTF-16 surrogates replaced by U+FFFD in this table's rows (absent: none) */
  replacedSurrogates?: number;
}

type Unfinished = 'failed' | 'skipped' | 'interrupted' | 'not_started';

export interface RunSummary {
  runId: string;
  dest: string;
  /** ok: every task committed (exit 0); partial: some did not, failed: the run itself could not
   * do its job (exit 1); interrupted: stopped by a signal (exit 130 / 143). */
  status: 'ok' | 'partial' | 'failed' | 'interrupted';
  durationMs: number;
  tables: Record<string, TableTotals>;
  /** Tasks (school × resource), each counted once however many checkpoint pieces it committed. */
  tasks: {
    committed: number;
    failed: number;
    skipped: number;
    interrupted: number;
    not_started: number;
    resumed: number;
    checkpoints: number;
    /** Of the committed: full reads whose content was unchanged (no file written). */
    unchanged: number;
  };
  /** Every task that did not finish, once, with why (the rendered summary groups them; this keeps every one). */
  failures: { school_id: string; resource: string; status: Unfinished; code: string; message: string }[];
  /** Unfinished tasks with checkpoint pieces committed: the next run resumes them from there. */
  resumable: number;
  /**
   * How far behind the source the furthest task of this run is when it ends, in seconds: its new
   * watermark if it committed, else the one it had before (null: no watermark known).
   */
  maxLagSeconds: number | null;
  /** Undeclared fields per table (schema drift), tables of included people apart. */
  drift: Record<string, string[]>;
  /** Fields of included people (not in the API contract, classified by name), per table. */
  includeFields?: Record<string, string[]>;
  /** What the personal-data policy did to each undeclared field (drift and include fields). */
  fieldActions?: Record<string, Record<string, FieldAction>>;
  deletions: number;
  deactivated: string[];
  /** school -> "table.column" values exported as null for lack of scope. */
  scopeMasked: Record<string, string[]>;
  /**
   * recordsRead: API records this run read (what was read counts, committed or not: after an
   * interrupt too); rowsWritten: table rows in the files it committed (child tables included).
   * rowsPerSecond is rowsWritten per second, recordsPerSecond recordsRead per second.
   */
  throughput: {
    rowsPerSecond: number;
    megabytesPerSecond: number;
    requests: number;
    recordsRead: number;
    recordsPerSecond: number;
    rowsWritten: number;
  };
  notes: string[];
  personalData?: Manifest['personal_data'];
}

export interface SummaryInputs {
  deactivated: string[];
  scopeMasked: Record<string, string[]>;
  durationMs: number;
  dest: string;
  requests: number;
  /** Records read and the tasks' watermarks before the run, from the run's events (absent: none counted). */
  tally?: Pick<RunTally, 'recordsRead' | 'previous'>;
  notes: string[];
  /** The run failed as a whole (nothing to export, the manifest could not be written). */
  failRun: boolean;
  /** Child tables of includes: their undeclared fields are reported as include fields, not drift. */
  includeTables?: readonly string[];
  fieldActions?: Record<string, Record<string, FieldAction>>;
}

export function summarise(m: Manifest, o: SummaryInputs): RunSummary {
  const tables: Record<string, TableTotals> = {};
  const drift: Record<string, Set<string>> = {};
  const tasks = { committed: 0, failed: 0, skipped: 0, interrupted: 0, not_started: 0, resumed: 0, checkpoints: 0, unchanged: 0 };
  const failures: RunSummary['failures'] = [];
  let resumable = 0;
  for (const group of byTask(m.tasks)) {
    const outcome = taskOutcome(group);
    if (outcome.status === 'committed') {
      tasks.committed += 1;
      if (group.some((t) => t.status === 'unchanged')) tasks.unchanged += 1;
    } else {
      tasks[outcome.status] += 1;
      if (outcome.resumes) resumable += 1;
      failures.push({
        school_id: group[0]!.school_id,
        resource: group[0]!.resource,
        status: outcome.status,
        code: outcome.code,
        message: outcome.message,
      });
    }
    if (group.some((t) => t.checkpoint && t.checkpoint.snapshot !== m.run_id)) tasks.resumed += 1;
    tasks.checkpoints += group.filter((t) => t.status === 'committed' && t.checkpoint && !t.checkpoint.final).length;
  }
  for (const t of m.tasks) addTotals(t, tables, drift);
  collapseBySchool(failures, 'E_SCHOOL_INACTIVE');
  const seconds = Math.max(o.durationMs, 1) / 1000;
  const rows = Object.values(tables).reduce((a, t) => a + t.rows, 0);
  const bytes = Object.values(tables).reduce((a, t) => a + t.bytes, 0);
  const status = m.status === 'interrupted' ? 'interrupted' : o.failRun ? 'failed' : failures.length ? 'partial' : 'ok';
  return {
    runId: m.run_id,
    dest: o.dest,
    status,
    durationMs: o.durationMs,
    tables,
    tasks,
    failures,
    resumable,
    maxLagSeconds: maxLag(m, o.tally?.previous),
    ...splitDrift(drift, o.includeTables ?? []),
    ...(o.fieldActions ? { fieldActions: o.fieldActions } : {}),
    deletions: m.deletions.length,
    deactivated: o.deactivated,
    scopeMasked: o.scopeMasked,
    throughput: {
      rowsPerSecond: Math.round(rows / seconds),
      megabytesPerSecond: +(bytes / 2 ** 20 / seconds).toFixed(2),
      requests: o.requests,
      recordsRead: o.tally?.recordsRead ?? 0,
      recordsPerSecond: Math.round((o.tally?.recordsRead ?? 0) / seconds),
      rowsWritten: rows,
    },
    notes: o.notes,
    ...(m.personal_data ? { personalData: m.personal_data } : {}),
  };
}

/** Schema drift, and the fields of included people apart (they are not part of the API contract at all). */
function splitDrift(drift: Record<string, Set<string>>, includeTables: readonly string[]): Pick<RunSummary, 'drift' | 'includeFields'> {
  const out: Pick<RunSummary, 'drift' | 'includeFields'> = { drift: {} };
  for (const [table, fields] of Object.entries(drift)) {
    if (includeTables.includes(table)) (out.includeFields ??= {})[table] = [...fields].sort();
    else out.drift[table] = [...fields].sort();
  }
  return out;
}

/** now (the run's end) − the oldest watermark among its tasks: the new one where committed, else the previous. */
function maxLag(m: Manifest, previous: ReadonlyMap<string, string | null> | undefined): number | null {
  const end = Date.parse(m.finished_at);
  let oldest = Infinity;
  for (const group of byTask(m.tasks)) {
    const committed = group.map((t) => t.watermark).filter((w): w is string => !!w && !group.some((g) => g.error));
    const wm = committed.length ? committed.sort().at(-1) : previous?.get(taskKey(group[0]!.school_id, group[0]!.resource));
    const t = wm ? Date.parse(wm) : NaN;
    if (!Number.isNaN(t)) oldest = Math.min(oldest, t);
  }
  return Number.isFinite(oldest) && !Number.isNaN(end) ? Math.max(0, Math.round((end - oldest) / 1000)) : null;
}

/** A reason that belongs to the school (inactive) is said once for it, not once per task. */
function collapseBySchool(failures: RunSummary['failures'], code: string): void {
  const seen = new Set<string>();
  for (let i = failures.length - 1; i >= 0; i--) {
    const f = failures[i]!;
    if (f.code !== code) continue;
    f.resource = '*';
    const duplicate = seen.has(f.school_id);
    seen.add(f.school_id);
    if (duplicate) failures.splice(i, 1);
  }
}

/** Manifest entries grouped by task (a task committed in checkpoint pieces has several). */
function byTask(entries: ManifestTask[]): ManifestTask[][] {
  const groups = new Map<string, ManifestTask[]>();
  for (const t of entries) {
    const k = `${t.school_id}\u0000${t.resource}`;
    (groups.get(k) ?? groups.set(k, []).get(k)!).push(t);
  }
  return [...groups.values()];
}

/** Entries that did their job: an unchanged full read (scale) and a compacted file count as committed. */
const DONE: ReadonlySet<ManifestTask['status']> = new Set(['committed', 'unchanged', 'compacted']);

function taskOutcome(
  group: ManifestTask[],
): { status: 'committed' } | { status: Unfinished; code: string; message: string; resumes: boolean } {
  const ended = group.find((t) => !DONE.has(t.status) || t.error);
  if (!ended) return { status: 'committed' };
  const status = DONE.has(ended.status) ? 'failed' : (ended.status as Unfinished);
  // Only checkpoint pieces let the next run resume; a listed task whose state did not advance does not.
  const pieces = group.filter((t) => t.status === 'committed' && !t.error && t.checkpoint && !t.checkpoint.final).length;
  const resumes = pieces > 0 && status !== 'skipped';
  const kept = resumes ? ` (${pieces} checkpoint piece(s) committed: the next run resumes)` : '';
  return { status, code: ended.error?.code ?? 'E_INTERNAL', message: (ended.error?.message ?? 'did not finish') + kept, resumes };
}

function addTotals(t: ManifestTask, tables: Record<string, TableTotals>, drift: Record<string, Set<string>>): void {
  for (const f of t.files) {
    const tt = (tables[f.table] ??= { rows: 0, files: 0, bytes: 0 });
    tt.files += 1;
    tt.bytes += f.bytes;
  }
  for (const [table, n] of Object.entries(t.rows)) (tables[table] ??= { rows: 0, files: 0, bytes: 0 }).rows += n;
  for (const [table, fields] of Object.entries(t.drift_fields ?? {})) for (const f of fields) (drift[table] ??= new Set()).add(f);
  for (const [table, n] of Object.entries(t.replaced_surrogates ?? {})) {
    const tt = (tables[table] ??= { rows: 0, files: 0, bytes: 0 });
    tt.replacedSurrogates = (tt.replacedSurrogates ?? 0) + n;
  }
}

const fmtBytes = (n: number) =>
  n < 1024
    ? `${n} B`
    : n < 1024 ** 2
      ? `${(n / 1024).toFixed(1)} KiB`
      : n < 1024 ** 3
        ? `${(n / 1024 ** 2).toFixed(1)} MiB`
        : `${(n / 1024 ** 3).toFixed(2)} GiB`;

const HEADLINE: Record<RunSummary['status'], string> = {
  ok: 'finished',
  partial: 'finished with failures',
  failed: 'FAILED',
  interrupted: 'INTERRUPTED',
};

/** The table a person reads at the end of a run. */
export function renderSummary(s: RunSummary): string {
  const lines = [`run ${s.runId} ${HEADLINE[s.status]} in ${formatElapsed(s.durationMs / 1000)} -> ${s.dest}`];
  lines.push(...tableLines(s));
  const t = s.tasks;
  const extra = [
    t.interrupted && `${t.interrupted} interrupted`,
    t.not_started && `${t.not_started} not started`,
    t.resumed && `${t.resumed} resumed`,
  ]
    .filter(Boolean)
    .join(', ');
  lines.push(
    `  tasks: ${t.committed} committed${t.unchanged ? ` (${t.unchanged} unchanged: no file written)` : ''}, ${t.failed} failed, ${t.skipped} skipped${extra ? `, ${extra}` : ''}; deletions recorded: ${s.deletions}`,
  );
  const tp = s.throughput;
  const n = (x: number) => x.toLocaleString('en');
  lines.push(
    `  throughput: ${n(tp.recordsRead)} records read (${n(tp.recordsPerSecond)}/s), ${n(tp.rowsWritten)} rows written (${n(tp.rowsPerSecond)}/s), ${tp.megabytesPerSecond} MB/s written, ${n(tp.requests)} requests`,
  );
  if (s.personalData) lines.push(`  ${describePolicy(s.personalData)}`, ...matchLines(s.personalData));
  lines.push(...fieldLines(s.drift, s.includeFields ?? {}, s.fieldActions ?? {}));
  for (const [table, t] of Object.entries(s.tables))
    if (t.replacedSurrogates)
      lines.push(
        `  text in ${table}: ${t.replacedSurrogates.toLocaleString('en')} lone surrogate(s) replaced by U+FFFD (docs/flattening.md, "Text")`,
      );
  for (const [school, cols] of Object.entries(s.scopeMasked)) lines.push(`  no scope at ${school}: ${cols.join(', ')} exported as null`);
  if (s.deactivated.length) lines.push(`  not exported (access revoked or declined): ${s.deactivated.join(', ')}`);
  for (const n of s.notes) lines.push(`  NOTE: ${n}`);
  lines.push(...failureLines(s.failures));
  const again = s.tasks.failed + s.tasks.interrupted + s.tasks.not_started - s.resumable;
  if (s.resumable) {
    lines.push(
      `  the next run resumes ${s.resumable} task(s) from their checkpoints${again > 0 ? `; ${again} other unfinished task(s) start again from their last committed state` : ''}`,
    );
  }
  return lines.join('\n');
}

function tableLines(s: RunSummary): string[] {
  const names = Object.keys(s.tables).sort();
  const w = Math.max(5, ...names.map((n) => n.length));
  const lines = [`  ${'table'.padEnd(w)} ${'rows'.padStart(12)} ${'files'.padStart(6)} ${'bytes'.padStart(11)}`];
  const total = { rows: 0, files: 0, bytes: 0 };
  for (const n of names) {
    const t = s.tables[n]!;
    total.rows += t.rows;
    total.files += t.files;
    total.bytes += t.bytes;
    lines.push(
      `  ${n.padEnd(w)} ${t.rows.toLocaleString('en').padStart(12)} ${String(t.files).padStart(6)} ${fmtBytes(t.bytes).padStart(11)}`,
    );
  }
  lines.push(
    `  ${'total'.padEnd(w)} ${total.rows.toLocaleString('en').padStart(12)} ${String(total.files).padStart(6)} ${fmtBytes(total.bytes).padStart(11)}`,
  );
  return lines;
}
