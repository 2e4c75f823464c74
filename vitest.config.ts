import { defineConfig } from 'vitest/config';
import { LongestFirst } from './test/helpers/longest-first.ts';

/** Files that need a module graph of their own: they replace a module with vi.mock. */
const ISOLATED = ['test/sink/local-list-prune.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Integration tests start real servers on port 0; two cores, so keep parallelism modest.
    pool: 'forks',
    maxWorkers: 2,
    // vi.stubEnv in a test never leaks into the next one
    unstubEnvs: true,
    // the slowest files start first, also on a clean clone with no cached durations (test/helpers/longest-first.ts)
    sequence: { sequencer: LongestFirst },
    projects: [
      { extends: true, test: { name: 'isolated', include: ISOLATED } },
      // The other files share each worker's modules: a fresh module graph for each of 158 files
      // cost 70-90 s of a 2-core machine (vitest's "import" time; 16-18 s shared, in CI). Tests keep no
      // state in modules between files: env stubs are undone (above), servers stopped.
      { extends: true, test: { name: 'shared', include: ['test/**/*.test.ts'], exclude: ISOLATED, isolate: false } },
    ],
  },
});
