import type { Timers } from '../../src/webhooks/timers.ts';

/**
 * Timers that only move when the test says so: `advance(ms)` fires every timer due on the way,
 * in order. Zero-delay timers run on the next turn of the event loop (no clock involved). The
 * clock starts at the real time, so lease heartbeats written by real runs look fresh.
 */
export class ManualTimers implements Timers {
  private t = Date.now();
  private seq = 0;
  private readonly pending = new Map<number, { at: number; fn: () => void }>();

  now(): number {
    return this.t;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const id = ++this.seq;
    this.pending.set(id, { at: this.t + Math.max(0, ms), fn });
    if (ms <= 0) setImmediate(() => this.fire(id));
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.pending.delete(handle as number);
  }

  /** Milliseconds until the next timer, or undefined when none is set. */
  nextIn(): number | undefined {
    const ats = [...this.pending.values()].map((p) => p.at);
    return ats.length ? Math.max(0, Math.min(...ats) - this.t) : undefined;
  }

  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      const next = [...this.pending.entries()].filter(([, p]) => p.at <= end).sort((a, b) => a[1].at - b[1].at || a[0] - b[0])[0];
      if (!next) break;
      this.t = Math.max(this.t, next[1].at);
      this.fire(next[0]);
    }
    this.t = end;
  }

  private fire(id: number): void {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    p.fn();
  }
}

/**
 * Lets promises and I/O run until cond holds. Nothing waits on the clock for an event to happen:
 * the deadline only bounds how long a broken test hangs. (A bound in event-loop turns failed on a
 * loaded machine, where 20,000 turns passed before one fsync of the queue file completed.)
 */
export async function until(cond: () => boolean, what = 'condition', deadlineMs = 30_000): Promise<void> {
  const end = performance.now() + deadlineMs;
  while (!cond() && performance.now() < end) await new Promise((r) => setImmediate(r));
  if (!cond()) throw new Error(`${what} not reached`);
}
