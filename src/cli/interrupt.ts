import { setMaxListeners, type EventEmitter } from 'node:events';

export const SIGNAL_EXIT = { SIGINT: 130, SIGTERM: 143 } as const;
type Handled = keyof typeof SIGNAL_EXIT;

/** The part of `process` signal handling uses (tests pass an EventEmitter). */
export interface SignalTarget extends Pick<EventEmitter, 'on' | 'off'> {
  exit(code: number): void;
  stderr: { write(text: string): unknown };
}

/**
 * The first SIGINT/SIGTERM asks the run to stop: every request is abandoned, tasks end without
 * committing what they had not finished, the manifest says `interrupted`, the exit status is 130
 * or 143. A second signal exits at once, for a stop that must not wait even for the manifest.
 */
export function onInterrupt(target: SignalTarget = process): { signal: AbortSignal; exitCode(): number; dispose(): void } {
  const ac = new AbortController();
  // every request in flight listens to it (undici): the run's concurrency bounds them, not Node's
  // default of 10, whose warning would break the one-JSON-object-per-line logs
  setMaxListeners(0, ac.signal);
  let received: Handled | undefined;
  const handler = (sig: Handled) => {
    if (received) return target.exit(SIGNAL_EXIT[sig]);
    received = sig;
    target.stderr.write(`school-export: ${sig} received: stopping (finishing the manifest); send it again to exit at once\n`);
    ac.abort(new Error(`interrupted by ${sig}`));
  };
  const signals = Object.keys(SIGNAL_EXIT) as Handled[];
  for (const sig of signals) target.on(sig, handler);
  return {
    signal: ac.signal,
    exitCode: () => SIGNAL_EXIT[received ?? 'SIGINT'],
    dispose: () => {
      for (const sig of signals) target.off(sig, handler);
    },
  };
}
