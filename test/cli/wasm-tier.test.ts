import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const WASM_TIER = fileURLToPath(new URL('../../src/cli/wasm-tier.ts', import.meta.url));

/**
 * In a child process (V8's flags are the whole process's): compiles a one-function WebAssembly
 * module and calls it until V8 has optimised it or 100 rounds of 100,000 calls have passed (a
 * tiering budget of 10 makes V8 start at once; the optimised code is compiled on a background
 * thread, so each round yields to let it land). Prints the tier the function ended on.
 */
function tierAfterHotLoop(setup: string, nodeArgs: string[] = []): string {
  const program = `
    const { keepWasmOnBaseline } = await import(${JSON.stringify(WASM_TIER)});
    ${setup}
    // (module (func (export "add") (param i32 i32) (result i32) local.get 0 local.get 1 i32.add))
    const bytes = new Uint8Array([0,97,115,109,1,0,0,0,1,7,1,96,2,127,127,1,127,3,2,1,0,7,7,1,3,97,100,100,0,0,10,9,1,7,0,32,0,32,1,106,11]);
    const { add } = new WebAssembly.Instance(new WebAssembly.Module(bytes)).exports;
    for (let round = 0; round < 100 && !%IsTurboFanFunction(add); round++) {
      for (let i = 0; i < 100000; i++) add(i, 1);
      await new Promise((r) => setImmediate(r));
    }
    console.log(%IsTurboFanFunction(add) ? 'optimised' : %IsLiftoffFunction(add) ? 'baseline' : 'other');`;
  const r = spawnSync(
    process.execPath,
    ['--allow-natives-syntax', '--wasm-tiering-budget=10', ...nodeArgs, '--import', 'tsx', '--input-type=module', '-e', program],
    { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } },
  );
  if (r.status !== 0) throw new Error(r.stderr);
  return r.stdout.trim();
}

/**
 * Node 24's V8 reads this flag only when the process starts, and Node 24 does not wait for the
 * optimising compiler's background work at exit either (measured: 5-9 ms from the summary to exit
 * with and without the flag); the flag matters, and holds, on Node 20.
 */
const READ_AT_RUN_TIME = Number(process.versions.node.split('.')[0]) === 20;

describe('keepWasmOnBaseline', () => {
  it.runIf(READ_AT_RUN_TIME)(
    "keeps WebAssembly (undici's HTTP parser) off the optimising compiler, whose background work Node waits for at exit",
    () => {
      expect(tierAfterHotLoop('')).toBe('optimised');
      expect(tierAfterHotLoop('keepWasmOnBaseline();')).toBe('baseline');
    },
  );

  it('leaves a tiering flag given to node alone', () => {
    expect(tierAfterHotLoop('keepWasmOnBaseline();', ['--no-liftoff-only'])).toBe('optimised');
  });
});
