import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { runExport } from '../../src/pipeline/run.ts';
import { sandboxConfig, tempDir } from './helpers.ts';

/**
 * The command line keeps the process's young generation for a night of small tasks and caps it
 * for the format once a task reads a large page (src/cli/heap.ts): the run says when, once.
 */
describe('the run tells when it reads a large page', () => {
  let small: Sandbox;
  let large: Sandbox;
  const tmp = tempDir('large-pages-');

  beforeAll(async () => {
    small = await startSandbox({ seed: 3, schools: 3, achievementsPerSchool: 2 });
    large = await startSandbox({ seed: 3, schools: 2, achievementsPerSchool: 600 });
  });
  afterAll(async () => {
    await small?.close();
    await large?.close();
    tmp.cleanup();
  });

  const run = async (sb: Sandbox, dir: string) => {
    let calls = 0;
    const cfg = sandboxConfig(sb, `${tmp.dir}/${dir}`, { format: 'parquet', resources: ['achievements'], per_page: 500 });
    const summary = await runExport(cfg, { token: sb.tokens.full, onLargePage: () => calls++ });
    expect(summary.status).toBe('ok');
    return calls;
  };

  it('never for pages of a few rows', async () => {
    expect(await run(small, 'small')).toBe(0);
  });

  it('once for a run whose pages are large, however many there are', async () => {
    expect(await run(large, 'large')).toBe(1);
  });
});
