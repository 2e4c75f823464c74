/**
 * The benchmark's wide data shape at its tiniest scale: the sections whose work depends on the
 * shape of the data (throughput, memory, start-up) run and report figures consistent with the data
 * served. The other sections are the standard shape's smoke test (bench-smoke.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { runBench } from '../../bench/bench.ts';
import { expectDataPathFigures, expectStartupFigures } from './smoke-checks.ts';

describe('npm run bench --tiny --shape=wide', () => {
  it('measures the data path of the wide shape and prints it in the table', async () => {
    const { results, table } = await runBench({ mode: 'tiny', shapes: ['wide'], only: ['throughput', 'memory', 'startup'] });
    expectDataPathFigures(results, 'wide');
    expectStartupFigures(results, 'wide');
    expect(table).toMatch(/\| 2 end to end +\| wide +\|/);
  }, 300_000);
});
