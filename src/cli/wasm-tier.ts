import { setFlagsFromString } from 'node:v8';

/**
 * Keeps WebAssembly on V8's baseline compiler (Liftoff) for this process. undici parses HTTP with
 * llhttp, compiled to WebAssembly at the first connection. By default V8 then recompiles llhttp's
 * busy functions with its optimising compiler on background threads, and Node waits for every
 * background task before the process exits: a short run sat idle for up to 210 ms after its
 * summary (measured on Node 20, 6 schools x 10 achievements, two rounds of 7 runs: 26-209 and
 * 48-119 ms as is, 5-6 ms with this; the whole command's medians 923 / 751 ms as is, 724 / 625 ms
 * with this; 867 against 676 ms over 10 interleaved pairs). What llhttp does is a few calls per
 * response, so the optimised code gains nothing a run can see: 4 schools x 30,000 achievements
 * (wide shape) took 9.40 s of CPU as is and 9.21 s with this (medians of 3), a 400-school full
 * night 25.1 s both ways.
 *
 * Node 24 neither waits (5-9 ms from the summary to exit, with or without this) nor reads the flag
 * once it has started; Node 20 does both.
 *
 * Set before the first request compiles llhttp, unless node was started with a WebAssembly tiering
 * flag of its own (V8's flags cannot come through NODE_OPTIONS).
 */
export function keepWasmOnBaseline(): void {
  if (process.execArgv.some((a) => /liftoff|wasm[-_]tier[-_]up|wasm[-_]dynamic[-_]tiering/.test(a))) return;
  setFlagsFromString('--liftoff-only');
}
