import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import type { Row } from '../../src/table.ts';
import { approvedSchools, canonical, expectedState, exportOnce, tempDir } from './helpers.ts';

/**
 * The plan reads each school's permissions once (the probe) and the school_permissions task
 * writes that response, kept meanwhile as deflated JSON: one request per school, and the rows equal
 * the service's.
 */
describe('the permissions probe is reused by the school_permissions task', () => {
  let sb: Sandbox;
  beforeAll(async () => {
    sb = await startSandbox({ seed: 5, schools: 3, achievementsPerSchool: 2 });
  });
  afterAll(async () => {
    await sb?.close();
  });

  it('one permissions request per school, and the rows written are the service’s', async () => {
    const t = tempDir('prefetch-');
    try {
      sb.control.clearRequests();
      const summary = await exportOnce(sb, t.dir, { format: 'ndjson', resources: ['school_permissions'] });
      expect(summary.status).toBe('ok');
      const asked = sb.control.requests().filter((r) => /\/meta\/schools\/[^/]+\/permissions/.test(r.path));
      expect(asked.map((r) => r.path.replace(/\?.*/, '').replace(/^\/v[0-9.]+/, '')).sort()).toEqual(
        ['A1001', 'A1002', 'A1003'].map((id) => `/meta/schools/${id}/permissions`),
      );

      const written: Row[] = [];
      const walk = (dir: string): void => {
        for (const e of readdirSync(dir, { withFileTypes: true })) {
          if (e.isDirectory() && !e.name.startsWith('_')) walk(join(dir, e.name));
          else if (e.isFile() && e.name.endsWith('.ndjson') && dir.includes('school_permissions'))
            for (const line of readFileSync(join(dir, e.name), 'utf8').split('\n')) if (line) written.push(JSON.parse(line) as Row);
        }
      };
      walk(t.dir);
      const regions = new Map((await approvedSchools(sb)).map((s) => [s.id, s.region]));
      const expected = await expectedState(sb, ['A1001', 'A1002', 'A1003'], (id) => regions.get(id)!);
      expect(written.length).toBeGreaterThan(3);
      expect(canonical(written)).toEqual(canonical(expected.get('school_permissions')!));
    } finally {
      t.cleanup();
    }
  });
});
