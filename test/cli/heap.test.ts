import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const HEAP = fileURLToPath(new URL('../../src/cli/heap.ts', import.meta.url));

/**
 * A child process (the flags are the whole process's) keeps a quarter of what it allocates alive
 * for a while, as a run keeps its in-flight pages, which is what makes V8 grow the young
 * generation; it yields between bursts so the collections are reported. Prints the largest young
 * generation seen, MB.
 */
function largestYoungMb(script: string, nodeArgs: string[] = [], env: NodeJS.ProcessEnv = {}): number {
  const program = `
    const { boundYoungGeneration, youngGenerationBytes } = await import(${JSON.stringify(HEAP)});
    ${script}
    let largest = 0, keep = [];
    for (let burst = 0; burst < 200; burst++) {
      for (let i = 0; i < 20000; i++) {
        const o = { i, text: 'row ' + i + ' of burst ' + burst };
        if (i % 4 === 0) keep.push(o);
      }
      if (keep.length > 40000) keep = keep.slice(20000);
      await new Promise((r) => setImmediate(r));
      largest = Math.max(largest, youngGenerationBytes());
    }
    console.log(largest / 2 ** 20);`;
  const r = spawnSync(process.execPath, [...nodeArgs, '--import', 'tsx', '--input-type=module', '-e', program], {
    encoding: 'utf8',
    env: { ...process.env, NODE_OPTIONS: '', ...env },
  });
  if (r.status !== 0) throw new Error(r.stderr);
  return Number(r.stdout.trim());
}

describe('boundYoungGeneration', () => {
  it('keeps the young generation near the cap where V8 would grow it further', () => {
    const uncapped = largestYoungMb('');
    const capped = largestYoungMb('boundYoungGeneration(4 * 2 ** 20);');
    // V8 grows it to 32 MB on its own here (Node 20; 128 MB on Node 24). Capped at 4 MB it stays
    // at 4 MB on Node 20; Node 24 grows it in smaller steps between collections (up to 13 MB seen).
    expect(uncapped).toBeGreaterThanOrEqual(32);
    expect(capped).toBeLessThanOrEqual(16);
  });

  it('leaves a size given to node alone', () => {
    const cli = largestYoungMb('boundYoungGeneration(2 * 2 ** 20);', ['--max-semi-space-size=8']);
    const env = largestYoungMb('boundYoungGeneration(2 * 2 ** 20);', [], { NODE_OPTIONS: '--max-semi-space-size=8' });
    expect(cli).toBeGreaterThan(4);
    expect(env).toBeGreaterThan(4);
  });
});
