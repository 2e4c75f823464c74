import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planExport, renderPlan } from '../../src/pipeline/dry-run.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { exportOnce, sandboxConfig, tempDir } from './helpers.ts';

function walk(dir: string, base = ''): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(join(dir, e.name), `${base}${e.name}/`) : [`${base}${e.name}`],
  );
}

describe('run --dry-run', () => {
  let sb: Sandbox;
  beforeAll(async () => {
    sb = await startSandbox({ seed: 41, schools: 3, achievementsPerSchool: 50 });
  });
  afterAll(async () => {
    await sb?.close();
  });

  it('plans every task from discovery alone: no data request, nothing written, not even the folder', async () => {
    const tmp = tempDir('dry-');
    const dest = join(tmp.dir, 'not-yet');
    try {
      sb.control.clearRequests();
      const plan = await planExport(sandboxConfig(sb, dest, { format: 'csv' }), { token: sb.tokens.full });
      expect(sb.control.requests().map((r) => r.path.split('?')[0])).toEqual(['/v1.0/schools']);
      expect(existsSync(dest)).toBe(false);
      expect(plan.schools).toBe(3);
      expect(plan.tasks.length).toBe(3 * 10);
      const ach = plan.tasks.find((t) => t.school_id === 'A1001' && t.resource === 'achievements')!;
      expect(ach).toMatchObject({ mode: 'full', reason: 'first run' });
      expect(ach.writes).toContain(`achievement_students/region=uk/school_id=A1001/${plan.run_id}-NNNN.csv`);
      expect(renderPlan(plan)).toMatch(/A1001 +achievements +full +first run/);
    } finally {
      tmp.cleanup();
    }
  });

  it('after a run: incremental tasks with the updated_after they would send, and a destination left as it was', async () => {
    const tmp = tempDir('dry2-');
    try {
      await exportOnce(sb, tmp.dir, { format: 'ndjson' });
      const before = walk(tmp.dir).sort();
      sb.control.clearRequests();
      const plan = await planExport(sandboxConfig(sb, tmp.dir, { format: 'ndjson', schools: ['A1002'] }), { token: sb.tokens.full });
      expect(sb.control.requests().map((r) => r.path.split('?')[0])).toEqual(['/v1.0/schools']);
      expect(walk(tmp.dir).sort()).toEqual(before);
      const ach = plan.tasks.find((t) => t.resource === 'achievements')!;
      expect(ach.mode).toBe('incremental');
      expect(ach.updated_after).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
      expect(plan.tasks.every((t) => t.school_id === 'A1002')).toBe(true);
    } finally {
      tmp.cleanup();
    }
  });
});
