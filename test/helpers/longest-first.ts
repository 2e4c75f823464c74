import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Test files that each took over 40 s of a 2-core CI machine (clean-clone `.ci/run`, Node 20,
 * 2026-11-28), slowest first. On a clean clone vitest has no durations cached and starts the
 * largest files first, so the bench smoke files (short files, one call into the harness, 70-90 s
 * each) started last; with a cache it starts the longest first, and this gives a clean clone the
 * same order. Its own share of the time is not measured: the machine stays busy either way, and
 * CI's vitest went 632 -> 578-621 s together with the other changes of 0cc95b2 and b44d35a.
 * A renamed file only loses its place in this list.
 */
const SLOWEST = [
  'test/integration/compact.test.ts',
  'test/bench/bench-smoke.test.ts',
  'test/bench/bench-smoke-wide.test.ts',
  'test/install/production-install.test.ts',
  'test/integration/export-e2e.test.ts',
  'test/warehouse/duckdb-load.test.ts',
  'test/warehouse/loaders.test.ts',
  'test/integration/process-signals.test.ts',
  'test/docs/examples.test.ts',
];

export class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (f: TestSpecification): number => {
      const i = SLOWEST.findIndex((p) => f.moduleId.endsWith(p));
      return i < 0 ? SLOWEST.length : i;
    };
    // stable: files outside the list keep vitest's own order (its cached durations when it has them)
    return sorted
      .map((f, i) => ({ f, i }))
      .sort((a, b) => rank(a.f) - rank(b.f) || a.i - b.i)
      .map(({ f }) => f);
  }
}
