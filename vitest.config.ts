import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Integration tests start real servers on port 0; two cores, so keep parallelism modest.
    pool: 'forks',
    maxWorkers: 2,
    // vi.stubEnv in a test never leaks into the next one
    unstubEnvs: true,
  },
});
