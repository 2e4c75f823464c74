import type { Sink } from '../sink/types.ts';
import { etaSeconds, expectedRecords, loadEstimates, type Estimates } from './estimates.ts';
import { renderLive, type LiveView, type TermSize } from './live-view.ts';
import { RunTally, taskKey } from './run-tally.ts';

/**
 * What a run tells the person or the log collector watching it. On a TTY: a live block (tasks
 * done of total, records read, rows written, records/s, elapsed, ETA, the active tasks with a
 * percentage where the previous run of the task gives an estimate) redrawn in place a few times a
 * second, never wider than the terminal (src/pipeline/live-view.ts); the summary at the end lists
 * what did not finish. Otherwise: one JSON object per line with `level`, `time` and `event` (the
 * same field names `webhooks serve` uses). Events carry ids, paths and counts: never the token,
 * never a person-related value. `rows` in task_progress and task_done are records read;
 * task_committed's `rows_written` are table rows in committed files.
 */
type Ids = { school_id: string; resource: string };
export type RunEvent =
  | { event: 'run_start'; run_id: string; dest: string; format: string; schools: number; tasks: number }
  | ({ event: 'task_start'; mode: 'full' | 'incremental'; reason?: string } & Ids)
  | ({ event: 'task_progress'; rows: number; pages: number; bytes: number } & Ids)
  | ({ event: 'task_done'; rows: number; files: number; resumed?: boolean; unchanged?: boolean; ms: number } & Ids)
  | ({ event: 'task_committed'; rows_written: number; files: number } & Ids)
  | ({ event: 'task_failed' | 'task_skipped' | 'task_interrupted'; code: string; message: string } & Ids)
  | ({ event: 'checkpoint' | 'resumed'; seq: number; pages: number; rows: number } & Ids)
  | ({ event: 'resume_refused' | 'snapshot_incomplete'; reason: string } & Ids)
  | { event: 'school_skipped'; school_id: string; code?: string; reason: string }
  | { event: 'scope_masked'; school_id: string; columns: string[] }
  | { event: 'scope_undetermined'; properties: string[]; message: string }
  | { event: 'housekeeping_skipped'; operation: string; permission?: string; message: string }
  | { event: 'lease_wait'; holder: string }
  | { event: 'retry'; url: string; attempt: number; delay_ms: number; reason: string }
  | { event: 'run_done'; run_id: string; status: string; ms: number };

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
const LEVELS: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };

export function levelOf(e: RunEvent): LogLevel {
  switch (e.event) {
    case 'task_progress':
    case 'task_committed':
      return 'debug';
    case 'task_failed':
      return 'error';
    case 'task_skipped':
    case 'task_interrupted':
    case 'school_skipped':
    case 'scope_masked':
    case 'scope_undetermined':
    case 'housekeeping_skipped':
    case 'resume_refused':
    case 'snapshot_incomplete':
    case 'retry':
    case 'lease_wait':
      return 'warn';
    case 'run_done':
      return e.status === 'ok' ? 'info' : 'warn';
    default:
      return 'info';
  }
}

/** A task of the run's plan, as the live display needs it. */
export interface PlannedTask {
  school_id: string;
  resource: string;
  mode: 'full' | 'incremental';
  /** The task's committed watermark before this run (null: none, or a full refresh). */
  watermark: string | null;
}

export interface Reporter {
  emit(e: RunEvent): void;
  close(): void;
  /** The run's plan and destination, once known: the live display reads the tasks' previous sizes there. */
  planned?(o: { sink: Sink; runId: string; tasks: PlannedTask[] }): Promise<void>;
  /** What the run read and wrote so far, counted from the events (see tallied). */
  readonly tally?: RunTally;
}

/**
 * The reporter, counting what it is told: the summary's records read come from this tally, the
 * live display's from its own, counted alike.
 */
export function tallied(inner: Reporter): Reporter & { tally: RunTally } {
  const tally = new RunTally();
  return {
    tally,
    emit(e) {
      tally.observe(e);
      inner.emit(e);
    },
    close: () => inner.close(),
    planned: async (o) => {
      for (const t of o.tasks) tally.previous.set(taskKey(t.school_id, t.resource), t.watermark);
      await inner.planned?.(o);
    },
  };
}

export function createReporter(
  mode: 'auto' | 'tty' | 'json' | 'none',
  o: { stream?: NodeJS.WriteStream; level?: LogLevel; now?: () => number } = {},
): Reporter {
  const stream = o.stream ?? process.stderr;
  const m = mode === 'auto' ? (stream.isTTY ? 'tty' : 'json') : mode;
  if (m === 'none') return { emit() {}, close() {} };
  if (m === 'json') return jsonReporter(stream, o.level ?? 'info');
  return new TtyReporter(stream, o.now ?? (() => performance.now()));
}

function jsonReporter(stream: NodeJS.WritableStream, min: LogLevel): Reporter {
  return {
    emit(e) {
      const level = levelOf(e);
      if (LEVELS[level] < LEVELS[min]) return;
      stream.write(JSON.stringify({ level, time: new Date().toISOString(), ...e }) + '\n');
    },
    close() {},
  };
}

class TtyReporter implements Reporter {
  readonly tally = new RunTally();
  /** The width of each line of the live block on the screen. */
  private drawn: number[] = [];
  private readonly began: number;
  private readonly timer: NodeJS.Timeout;
  /** The run's tasks, once planned, with what each read the last time it ran (the ETA). */
  private plan: { key: string; expected?: number }[] = [];
  private estimates: Estimates | undefined;
  private readonly ended = new Set<string>();

  constructor(
    private readonly stream: NodeJS.WriteStream,
    private readonly now: () => number,
  ) {
    this.began = now();
    this.timer = setInterval(() => this.draw(), 250);
    this.timer.unref();
  }

  /** Resolves when the previous sizes are read (or could not be: no percentages then, an ETA from tasks/s alone). */
  async planned(o: { sink: Sink; runId: string; tasks: PlannedTask[] }): Promise<void> {
    const tasks = o.tasks;
    this.plan = tasks.map((t) => ({ key: taskKey(t.school_id, t.resource) }));
    await loadEstimates(o.sink, o.runId)
      .then((est) => {
        this.estimates = est;
        this.plan = tasks.map((t) => ({
          key: taskKey(t.school_id, t.resource),
          expected: expectedRecords(est, t.school_id, t.resource, t.mode),
        }));
      })
      .catch(() => undefined);
  }

  emit(e: RunEvent): void {
    this.tally.observe(e);
    const key = 'resource' in e ? `${e.school_id} ${e.resource}` : '';
    if ('resource' in e && /^task_(done|failed|skipped|interrupted)$/.test(e.event)) this.ended.add(taskKey(e.school_id, e.resource));
    switch (e.event) {
      case 'run_start':
        return this.line(`run ${e.run_id}: ${e.schools} schools, ${e.tasks} tasks -> ${e.dest} (${e.format})`);
      case 'resumed':
        return this.line(`resuming ${key} from page ${e.pages + 1} (${e.rows.toLocaleString('en')} rows committed before)`);
      case 'resume_refused':
        return this.line(`${key}: the saved cursor was refused; reading again from page 1`);
      case 'school_skipped':
        return this.line(`skipped ${e.school_id}: ${e.reason}`);
      case 'scope_masked':
        return this.line(`${e.school_id}: no scope for ${e.columns.join(', ')} (exported as null)`);
      case 'lease_wait':
        return this.line(`waiting for the run holding the destination: ${e.holder}`);
      case 'scope_undetermined':
      case 'housekeeping_skipped':
        return this.line(`warning: ${e.message}`);
      default:
        // Failed, skipped and interrupted tasks are listed once, by the summary: a line here would
        // repeat it. Retries show as a task's stall; checkpoints as its progress; the JSON log has both.
        return;
    }
  }

  /** What the display shows now: the tally, with each active task's previous size and the ETA. */
  view(): LiveView {
    const t = this.tally;
    const elapsedSeconds = Math.max(0, (this.now() - this.began) / 1000);
    const active = [...t.active.values()].map((a) => ({
      school: a.school,
      table: a.resource,
      mode: a.mode,
      records: a.records,
      pages: a.pages,
      expected: expectedRecords(this.estimates, a.school, a.resource, a.mode),
    }));
    const remaining = this.plan
      .filter((p) => !this.ended.has(p.key))
      .map((p) => ({ read: t.active.get(p.key)?.records ?? 0, expected: p.expected }));
    const etaSecondsLeft = etaSeconds({
      elapsedSeconds,
      recordsRead: t.recordsRead,
      done: t.done + t.unfinished,
      remainingTasks: Math.max(0, t.total - t.done - t.unfinished),
      remaining,
    });
    return {
      done: t.done,
      total: t.total,
      unfinished: t.unfinished,
      recordsRead: t.recordsRead,
      rowsWritten: t.rowsWritten,
      elapsedSeconds,
      ...(etaSecondsLeft !== undefined ? { etaSeconds: etaSecondsLeft } : {}),
      active,
    };
  }

  private size(): TermSize {
    return { columns: this.stream.columns || 80, rows: this.stream.rows || 24 };
  }

  /**
   * Moves up over the block drawn last and clears it. Each of its lines took one row (none is as
   * wide as the terminal was then); a terminal made narrower since has re-wrapped the longer ones
   * (tmux, VTE, iTerm2, Windows Terminal reflow), so those count as the rows they take now.
   */
  private clear(): void {
    if (!this.drawn.length) return;
    const columns = this.size().columns;
    const rows = this.drawn.reduce((a, width) => a + Math.max(1, Math.ceil(width / columns)), 0);
    this.stream.write(`\r\x1b[${rows}A\x1b[J`);
    this.drawn = [];
  }

  /** A line that stays (above the live block), folded to the terminal's width. */
  private line(text: string): void {
    this.clear();
    // a reason quoted from a response must not move the cursor or recolour the terminal
    const safe = text.replace(/[\u0000-\u001f\u007f-\u009f]/g, '\uFFFD');
    this.stream.write(fold(safe, Math.max(20, this.size().columns - 1)).join('\n') + '\n');
    this.draw();
  }

  private draw(): void {
    this.clear();
    const lines = renderLive(this.view(), this.size());
    this.stream.write(lines.join('\n') + '\n');
    this.drawn = lines.map((l) => l.length);
  }

  close(): void {
    clearInterval(this.timer);
    this.clear();
  }
}

/** A long line folded at spaces into lines of at most `width` characters, the later ones indented. */
export function fold(text: string, width: number): string[] {
  const out: string[] = [];
  let rest = text;
  while (rest.length > width) {
    const at = rest.lastIndexOf(' ', width);
    const end = at > width / 2 ? at : width;
    out.push(rest.slice(0, end));
    rest = '    ' + rest.slice(end).trimStart();
  }
  out.push(rest);
  return out;
}

export function formatElapsed(seconds: number): string {
  const s = Math.floor(seconds);
  return s < 60
    ? `${seconds.toFixed(1)} s`
    : s < 3600
      ? `${Math.floor(s / 60)} min ${s % 60} s`
      : `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}
