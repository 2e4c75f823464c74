/**
 * custom_resources end to end against the sandbox (the README suggests trying them there): a
 * pipeline declaring `students` exports every student, then picks up changes incrementally and
 * sees removals through the deletion records of type `student`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { runExport } from '../../src/pipeline/run.ts';
import { readManifests, readRows } from '../helpers/read-exports.ts';
import { sandboxConfig, tempDir } from '../integration/helpers.ts';
import type { TableSchema } from '../../src/table.ts';

let sb: Sandbox;
const out = tempDir('se-custom-');
beforeAll(async () => {
  sb = await startSandbox({ schools: 2, achievementsPerSchool: 5 });
});
afterAll(async () => {
  await sb.close();
  out.cleanup();
});

const NDJSON_ONLY = { name: 'any', columns: [] } as unknown as TableSchema; // NDJSON rows need no schema to read

async function rowsOf(table: string, runId: string): Promise<Record<string, unknown>[]> {
  const tasks = readManifests(out.dir).filter((t) => t.run_id === runId);
  const rows: Record<string, unknown>[] = [];
  for (const t of tasks) for (const f of t.files) if (f.table === table) rows.push(...(await readRows(out.dir, f.path, NDJSON_ONLY)));
  return rows;
}

describe('custom_resources: students', () => {
  it('exports every student, then only changes, and sees removals as deletions', async () => {
    const cfg = sandboxConfig(sb, out.dir, {
      format: 'ndjson',
      resources: ['students', 'deletions'],
      custom_resources: [{ name: 'students', path: '/schools/{school_id}/students' }],
    });
    const first = await runExport(cfg, { token: sb.tokens.full });
    expect(first.failures).toEqual([]);
    expect(first.status).toBe('ok');
    const runs1 = readManifests(out.dir);
    const run1 = runs1[0]!.run_id;
    const students1 = await rowsOf('students', run1);
    const expected = ['A1001', 'A1002'].flatMap((s) => sb.control.records(s, 'students').map((r) => `${s}/${String(r.id)}`));
    expect(students1.map((r) => `${String(r._school_id)}/${String(r.id)}`).sort()).toEqual(expected.sort());
    expect(students1[0]).toHaveProperty('forename');
    // Students are read from each school's own regional domain, with cursor pagination.
    const reqs = sb.control.requests().filter((r) => /\/schools\/A100\d\/students/.test(r.path));
    expect(reqs.find((r) => r.path.includes('A1002'))!.region).toBe('apac');
    expect(reqs.every((r) => r.path.includes('cursor='))).toBe(true);

    const changed = sb.control.update('A1001', 'students', String(expected[3]!.split('/')[1]), { forename: 'Changed' });
    const removedId = expected[7]!.split('/')[1]!;
    sb.control.remove('A1001', 'students', removedId);
    sb.control.clearRequests();
    expect((await runExport(cfg, { token: sb.tokens.full })).failures).toEqual([]);
    const run2 = readManifests(out.dir).find((t) => t.run_id !== run1)!.run_id;
    const students2 = await rowsOf('students', run2);
    expect(students2.map((r) => r.id)).toEqual([changed.id]);
    expect(students2[0]!.forename).toBe('Changed');
    const deletions2 = await rowsOf('deletions', run2);
    expect(deletions2.filter((d) => d.type === 'student').map((d) => d.id)).toContain(removedId);
    expect(sb.control.requests().some((r) => r.path.includes('/students?') && r.path.includes('updated_after='))).toBe(true);
  });
});
