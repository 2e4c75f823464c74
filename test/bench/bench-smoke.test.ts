/**
 * The benchmark harness at its tiniest scale, so it cannot rot: every section runs, every child
 * process starts and answers, and the figures are consistent with the data served. No timing
 * is asserted (performance belongs to `npm run bench`).
 */
import { describe, expect, it } from 'vitest';
import { runBench } from '../../bench/bench.ts';
import { expectDataPathFigures, expectMemoryFigures, expectRunFigures, expectStartupFigures } from './smoke-checks.ts';
import { expectScaleFigures } from './scale-checks.ts';

describe('npm run bench --tiny', () => {
  // the wide shape's data path has its own file (bench-smoke-wide.test.ts): the two run side by side
  it('measures every section on tiny data (standard shape) and prints one table', async () => {
    const { results, table } = await runBench({ mode: 'tiny', shapes: ['standard'] });
    expectDataPathFigures(results, 'standard');
    expectMemoryFigures(results, 'standard');
    expectRunFigures(results, 'standard');
    expectStartupFigures(results, 'standard');

    expectScaleFigures(results, table);

    for (const section of [
      '1 ceiling',
      '2 end to end',
      '2a hand-written',
      '2b stages',
      '2c page work',
      '3 native anchor',
      '4 memory',
      '5 latency-bound',
      '5b big school',
      '6 incremental',
      '7 decode paths',
      '8 scale',
      '9 live server',
      '10 start-up',
    ]) {
      expect(table).toContain(section);
    }
    expect(table).toMatch(/\| 2 end to end +\| standard +\|/);
  }, 300_000);
});
