import type { QueueFile, QueuedSchool } from './queue-file.ts';

/**
 * The schools waiting for a run, in the order they will be taken, and what happens to one whose
 * run did not export it: retried after a backoff (30 s, doubled for each further attempt up to a
 * cap), until the receiver gives up after `maxAttempts` runs. Each school is here once, however
 * often it is approved; entries are compared by identity, so a newer approval of a school that is
 * in a run going (or being looked at) is never mistaken for the older request.
 */
export type LogFn = (e: { event: string } & Record<string, unknown>) => void;

export interface RetryPolicy {
  maxAttempts: number;
  backoffSeconds: number;
  maxBackoffSeconds: number;
}

/** The one line per school and approval: exported, dropped, or deferred to the next run (error when the receiver gave up). */
export function logOutcome(
  log: LogFn,
  schoolId: string,
  level: 'info' | 'warn' | 'error',
  outcome: string,
  extra: Record<string, unknown> = {},
): void {
  log({ event: 'school_outcome', level, school_id: schoolId, outcome, ...extra });
}

export class WaitingList {
  private readonly m = new Map<string, QueuedSchool>();

  constructor(
    private readonly policy: RetryPolicy,
    private readonly now: () => number,
    private readonly log: LogFn,
  ) {}

  get size(): number {
    return this.m.size;
  }

  /** Is this entry (not just this school) still waiting? */
  holds(w: QueuedSchool): boolean {
    return this.m.get(w.school_id) === w;
  }

  /** Schools a stopped receiver left: those of its runs going first (they were taken first), then the waiting ones. */
  restore(kept: QueueFile): void {
    const at = new Date(this.now()).toISOString();
    for (const r of kept.running) for (const id of r.schools) this.m.set(id, { school_id: id, queued_at: at, attempts: 0 });
    for (const w of kept.waiting) if (!this.m.has(w.school_id)) this.m.set(w.school_id, { ...w });
  }

  /** An approval: the school waits (once); a pending backoff no longer applies, a run is asked for soon. */
  approve(schoolId: string): void {
    const known = this.m.get(schoolId);
    if (known) {
      known.attempts = 0;
      delete known.not_before;
      delete known.last_error;
    } else this.m.set(schoolId, { school_id: schoolId, queued_at: new Date(this.now()).toISOString(), attempts: 0 });
  }

  remove(schoolId: string): boolean {
    return this.m.delete(schoolId);
  }

  /** Those of `lane` whose turn has come, and when the next of the others' will. */
  due(inLane: (schoolId: string) => boolean, now: number): { due: QueuedSchool[]; later: number | undefined } {
    const due: QueuedSchool[] = [];
    let later: number | undefined;
    for (const w of this.m.values()) {
      if (!inLane(w.school_id)) continue;
      const at = w.not_before ? Date.parse(w.not_before) : 0;
      if (at <= now) due.push(w);
      else later = Math.min(later ?? at, at);
    }
    return { due, later };
  }

  /** Back in the list as it was (a run stopped by the receiver, not by the school's failure); a newer approval stands. */
  requeue(w: QueuedSchool): void {
    if (!this.m.has(w.school_id)) this.m.set(w.school_id, w);
  }

  /** Its run did not export it: wait for the backoff, or give up (logged once, at error level). */
  retryOrGiveUp(w: QueuedSchool, reason: string): void {
    const current = this.m.get(w.school_id);
    if (current && current !== w) return; // approved again meanwhile: that request stands
    this.m.delete(w.school_id);
    const attempts = w.attempts + 1;
    if (attempts >= this.policy.maxAttempts) {
      const outcome = `deferred to the next run: ${reason} (the receiver gave up after ${attempts} attempts)`;
      logOutcome(this.log, w.school_id, 'error', outcome, { attempts });
      return;
    }
    const delay = Math.min(this.policy.maxBackoffSeconds, this.policy.backoffSeconds * 2 ** (attempts - 1)) * 1000;
    this.m.set(w.school_id, { ...w, attempts, not_before: new Date(this.now() + delay).toISOString(), last_error: reason });
    this.log({ event: 'run_retry', level: 'info', school_id: w.school_id, attempts, retry_in_seconds: delay / 1000, reason });
  }

  snapshot(): QueuedSchool[] {
    return [...this.m.values()].map((w) => ({ ...w }));
  }
}
