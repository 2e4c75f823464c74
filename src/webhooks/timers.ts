/**
 * The clock and timers the run queue waits with (backoff, lease polls, collecting approvals,
 * run time limits). Tests pass a manual one: no test waits for real time to pass.
 */
export interface Timers {
  /** Milliseconds since the epoch. */
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const realTimers: Timers = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, ms);
    t.unref(); // a pending retry never keeps a stopped receiver alive
    return t;
  },
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};
