import { hideBin } from 'yargs/helpers';
import { oneLine } from '../errors.ts';
import { buildCli, exitCodeFor } from './commands.ts';
import { boundHeap } from './heap.ts';
import { keepWasmOnBaseline } from './wasm-tier.ts';

/** The entry point bin/school-export.js loads: parse, run one command, map errors to exit codes. */

// `school-export schools list | head` closes our stdout early: that is the reader's choice, not an error
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code === 'EPIPE') process.exit(0);
  throw e;
});

boundHeap();
keepWasmOnBaseline();

try {
  await (await buildCli(hideBin(process.argv))).parseAsync();
} catch (e) {
  process.stderr.write(`school-export: ${oneLine(e)}\n`);
  // A command interrupted by a signal has set 130 / 143 already; keep it.
  const interrupted = typeof process.exitCode === 'number' && process.exitCode >= 128;
  process.exit(interrupted ? (process.exitCode as number) : exitCodeFor(e));
}
