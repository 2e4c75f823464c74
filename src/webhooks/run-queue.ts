import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { assertSafeId } from '../ids.ts';

/**
 * Starts `school-export run PIPELINE --schools <id>` when a school is approved, at most one run per
 * school at a time: an approval arriving while that school's run is going queues exactly one more
 * run (the running one may have planned before the new directive was written).
 */
export type Command = { cmd: string; args: string[] };

const BIN = fileURLToPath(new URL('../../bin/school-export.js', import.meta.url));

export function runCommand(pipeline: string, schoolId: string): Command {
  return { cmd: process.execPath, args: [BIN, 'run', pipeline, '--schools', assertSafeId(schoolId)] };
}

export class RunQueue {
  private readonly running = new Map<string, { child: ChildProcess; done: Promise<void> }>();
  private readonly again = new Set<string>();
  private closed = false;

  constructor(
    private readonly command: (schoolId: string) => Command,
    private readonly log: (e: object) => void,
  ) {}

  request(schoolId: string): void {
    if (this.closed) return;
    if (this.running.has(schoolId)) {
      this.again.add(schoolId);
      this.log({ event: 'run_queued', school_id: schoolId });
      return;
    }
    this.start(schoolId);
  }

  /** Resolves when the school's current run (and a queued one) has exited; for tests and shutdown. */
  async idle(schoolId: string): Promise<void> {
    while (this.running.has(schoolId)) await this.running.get(schoolId)!.done;
  }

  private start(schoolId: string): void {
    const { cmd, args } = this.command(schoolId);
    // the child's output goes to our stderr: stdout stays one JSON object per line for log shippers
    const child = spawn(cmd, args, { stdio: ['ignore', 2, 2], env: process.env });
    this.log({ event: 'run_started', school_id: schoolId, pid: child.pid });
    const done = new Promise<void>((resolveDone) => {
      let ended = false; // 'error' and 'exit' may both fire
      const finish = (code: number | null, signal: NodeJS.Signals | null, error?: string) => {
        if (ended) return;
        ended = true;
        this.running.delete(schoolId);
        this.log({ event: 'run_exit', school_id: schoolId, code, signal, ...(error ? { error } : {}) });
        if (this.again.delete(schoolId) && !this.closed) this.start(schoolId);
        resolveDone();
      };
      child.once('error', (e) => finish(null, null, e.message));
      child.once('exit', (code, signal) => finish(code, signal));
    });
    this.running.set(schoolId, { child, done });
  }

  /** Stops queued runs and ends running ones (a run killed mid-way commits nothing: state is written last). */
  async close(): Promise<void> {
    this.closed = true;
    this.again.clear();
    const waits = [...this.running.values()].map(({ child, done }) => {
      child.kill('SIGTERM');
      return done;
    });
    await Promise.all(waits);
  }
}
