/**
 * What a run tells the person or the cron log watching it. On a TTY: a live block of active
 * tasks (rows, pages) redrawn a few times a second. Otherwise: one JSON line per task event,
 * which log collectors parse. Never contains the token: events carry ids, paths and counts.
 */
export type RunEvent =
  | { event: 'run_start'; run_id: string; dest: string; format: string; schools: number; tasks: number }
  | { event: 'task_start'; school_id: string; resource: string; mode: 'full' | 'incremental' }
  | { event: 'task_progress'; school_id: string; resource: string; rows: number; pages: number; bytes: number }
  | { event: 'task_done'; school_id: string; resource: string; rows: number; files: number; ms: number }
  | { event: 'task_failed'; school_id: string; resource: string; code: string; message: string }
  | { event: 'school_skipped'; school_id: string; reason: string }
  | { event: 'retry'; url: string; attempt: number; delay_ms: number; reason: string }
  | { event: 'run_done'; run_id: string; status: string; ms: number };

export interface Reporter {
  emit(e: RunEvent): void;
  close(): void;
}

export function createReporter(mode: 'auto' | 'tty' | 'json' | 'none', stream: NodeJS.WriteStream = process.stderr): Reporter {
  const m = mode === 'auto' ? (stream.isTTY ? 'tty' : 'json') : mode;
  if (m === 'none') return { emit() {}, close() {} };
  if (m === 'json') {
    return {
      emit(e) {
        if (e.event === 'task_progress') return; // too chatty for logs: start/done carry the counts
        stream.write(JSON.stringify({ time: new Date().toISOString(), ...e }) + '\n');
      },
      close() {},
    };
  }
  return new TtyReporter(stream);
}

class TtyReporter implements Reporter {
  private readonly active = new Map<string, { rows: number; pages: number; mode: string; started: number }>();
  private done = 0;
  private failed = 0;
  private total = 0;
  private rows = 0;
  private drawn = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly stream: NodeJS.WriteStream) {
    this.timer = setInterval(() => this.draw(), 250);
    this.timer.unref();
  }

  emit(e: RunEvent): void {
    const key = 'school_id' in e && 'resource' in e ? `${e.school_id} ${e.resource}` : '';
    switch (e.event) {
      case 'run_start':
        this.total = e.tasks;
        this.line(`run ${e.run_id}: ${e.schools} schools, ${e.tasks} tasks -> ${e.dest} (${e.format})`);
        break;
      case 'task_start':
        this.active.set(key, { rows: 0, pages: 0, mode: e.mode, started: Date.now() });
        break;
      case 'task_progress': {
        const a = this.active.get(key);
        if (a) {
          this.rows += e.rows - a.rows;
          a.rows = e.rows;
          a.pages = e.pages;
        }
        break;
      }
      case 'task_done': {
        const a = this.active.get(key);
        this.rows += e.rows - (a?.rows ?? 0);
        this.active.delete(key);
        this.done += 1;
        break;
      }
      case 'task_failed':
        this.active.delete(key);
        this.failed += 1;
        this.line(`FAILED ${e.school_id} ${e.resource}: ${e.message}`);
        break;
      case 'school_skipped':
        this.line(`skipped ${e.school_id}: ${e.reason}`);
        break;
      case 'retry':
        break; // shown as the task's stall; the JSON log records each retry
      case 'run_done':
        break;
    }
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
    const lines = [
      `${this.done + this.failed}/${this.total} tasks, ${this.rows.toLocaleString('en')} rows${this.failed ? `, ${this.failed} failed` : ''}`,
    ];
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
