/**
 * The benchmark's wide data shape at its tiniest scale: the data path (throughput: the ceiling,
 * end to end in every format, the stages and the page work), whose work depends on the shape of
 * the data, runs and reports figures consistent with the data served. The other sections take
 * the shape as a parameter of the same code: the standard shape's smoke test
 * (bench-smoke.test.ts) runs them, and this file leaves them out to keep `npm test` short.
 */
import { describe, expect, it } from 'vitest';
import { runBench } from '../../bench/bench.ts';
import { expectDataPathFigures } from './smoke-checks.ts';

describe('npm run bench --tiny --shape=wide', () => {
  it('measures the data path of the wide shape and prints it in the table', async () => {
    const { results, table } = await runBench({ mode: 'tiny', shapes: ['wide'], only: ['throughput'] });
    expectDataPathFigures(results, 'wide');
    expect(table).toMatch(/\| 2 end to end +\| wide +\|/);
  }, 300_000);
});
