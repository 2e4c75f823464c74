/**
 * What a run tells the person or the log collector watching it. On a TTY: a live block (tasks
 * done of total, rows, rows/s, elapsed, the active tasks) redrawn a few times a second; the
 * summary at the end lists what did not finish, once. Otherwise: one JSON object per line with
 * `level`, `time` and `event` (the same field names `webhooks serve` uses). Events carry ids,
 * paths and counts: never the token, never a person-related value.
 */
type Ids = { school_id: string; resource: string };
export type RunEvent =
  | { event: 'run_start'; run_id: string; dest: string; format: string; schools: number; tasks: number }
  | ({ event: 'task_start'; mode: 'full' | 'incremental'; reason?: string } & Ids)
  | ({ event: 'task_progress'; rows: number; pages: number; bytes: number } & Ids)
  | ({ event: 'task_done'; rows: number; files: number; resumed?: boolean; unchanged?: boolean; ms: number } & Ids)
  | ({ event: 'task_failed' | 'task_skipped' | 'task_interrupted'; code: string; message: string } & Ids)
  | ({ event: 'checkpoint' | 'resumed'; seq: number; pages: number; rows: number } & Ids)
  | ({ event: 'resume_refused' | 'snapshot_incomplete'; reason: string } & Ids)
  | { event: 'school_skipped'; school_id: string; code?: string; reason: string }
  | { event: 'scope_masked'; school_id: string; columns: string[] }
  | { event: 'lease_wait'; holder: string }
  | { event: 'retry'; url: string; attempt: number; delay_ms: number; reason: string }
  | { event: 'run_done'; run_id: string; status: string; ms: number };

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
const LEVELS: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };

export function levelOf(e: RunEvent): LogLevel {
  switch (e.event) {
    case 'task_progress':
      return 'debug';
    case 'task_failed':
      return 'error';
    case 'task_skipped':
    case 'task_interrupted':
    case 'school_skipped':
    case 'scope_masked':
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

export interface Reporter {
  emit(e: RunEvent): void;
  close(): void;
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
  private readonly active = new Map<string, { rows: number; pages: number; mode: string }>();
  private done = 0;
  private unfinished = 0;
  private total = 0;
  private rows = 0;
  private drawn = 0;
  private readonly began: number;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly stream: NodeJS.WriteStream,
    private readonly now: () => number,
  ) {
    this.began = now();
    this.timer = setInterval(() => this.draw(), 250);
    this.timer.unref();
  }

  emit(e: RunEvent): void {
    const key = 'resource' in e ? `${e.school_id} ${e.resource}` : '';
    switch (e.event) {
      case 'run_start':
        this.total = e.tasks;
        return this.line(`run ${e.run_id}: ${e.schools} schools, ${e.tasks} tasks -> ${e.dest} (${e.format})`);
      case 'task_start':
        this.active.set(key, { rows: 0, pages: 0, mode: e.mode });
        return;
      case 'task_progress':
        return this.progress(key, e.rows, e.pages);
      case 'task_done':
        this.progress(key, e.rows, 0);
        this.active.delete(key);
        this.done += 1;
        return;
      case 'task_failed':
      case 'task_skipped':
      case 'task_interrupted':
        // Listed once, by the summary: a line here would repeat it and garble the live block.
        this.active.delete(key);
        this.unfinished += 1;
        return;
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
      default:
        return; // retries show as a task's stall; checkpoints as its progress; the JSON log has both
    }
  }

  private progress(key: string, rows: number, pages: number): void {
    const a = this.active.get(key);
    if (!a) return;
    this.rows += rows - a.rows;
    a.rows = rows;
    if (pages) a.pages = pages;
  }

  private clear(): void {
    if (this.drawn > 0) this.stream.write(`\x1b[${this.drawn}A\x1b[0J`);
    this.drawn = 0;
  }

  private line(text: string): void {
    this.clear();
    this.stream.write(text + '\n');
    this.draw();
  }

  private draw(): void {
    this.clear();
    const seconds = Math.max(0.001, (this.now() - this.began) / 1000);
    const rate = Math.round(this.rows / seconds).toLocaleString('en');
    const notDone = this.unfinished ? `, ${this.unfinished} not finished` : '';
    const head = `${this.done}/${this.total} tasks${notDone}, ${this.rows.toLocaleString('en')} rows, ${rate} rows/s, ${formatElapsed(seconds)}`;
    const lines = [head];
    const shown = [...this.active.entries()].slice(0, 12);
    for (const [k, a] of shown)
      lines.push(`  ${k.padEnd(40)} ${a.mode.padEnd(11)} ${String(a.rows).padStart(10)} rows ${String(a.pages).padStart(6)} pages`);
    if (this.active.size > shown.length) lines.push(`  … and ${this.active.size - shown.length} more`);
    this.stream.write(lines.join('\n') + '\n');
    this.drawn = lines.length;
  }

  close(): void {
    clearInterval(this.timer);
    this.clear();
  }
}

export function formatElapsed(seconds: number): string {
  const s = Math.floor(seconds);
  return s < 60
    ? `${seconds.toFixed(1)} s`
    : s < 3600
      ? `${Math.floor(s / 60)} min ${s % 60} s`
      : `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}
