import { spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runExport } from '../../src/pipeline/run.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import type { Row } from '../../src/table.ts';
import { builtinTables, warehouseLoad } from '../../src/warehouse/commands.ts';
import { dump, runEntries, runStaticScript } from '../warehouse/fixtures.ts';
import { currentTables } from '../warehouse/tables.ts';
import { BIN } from './child-run.ts';
import { approvedSchools, canonical, expectedState, sandboxConfig, tempDir } from './helpers.ts';

/**
 * Issue 25 item 3: a pending file that cannot be loaded stops every load at its run until the
 * task is superseded, which is accepted only once a later full read of the school's resource
 * exists; then both loaders (`warehouse load --supersede`, and the static script with a row a
 * user inserts into _school_export_superseded, run in its DuckDB rendering) end equal to the
 * sandbox, and later loads need nothing more.
 */
describe('a stuck load unstuck by --supersede after a full refresh', () => {
  let sb: Sandbox;
  const tmp = tempDir('wh-supersede-');
  const dest = join(tmp.dir, 'exports');
  const db = join(tmp.dir, 'load.duckdb');
  const scriptDb = join(tmp.dir, 'script.duckdb');
  let schools: { id: string; region: string }[] = [];

  beforeAll(async () => {
    sb = await startSandbox({ seed: 25, schools: 3, achievementsPerSchool: 12 });
    schools = await approvedSchools(sb);
  });
  afterAll(async () => {
    await sb?.close();
    tmp.cleanup();
  });

  const night = async (extra: Record<string, unknown> = {}): Promise<string> => {
    const r = await runExport(sandboxConfig(sb, dest, { format: 'parquet', ...extra }), { token: sb.tokens.full });
    expect(r.failures).toEqual([]);
    return r.runId;
  };
  const touch = (school: string, n: number): void => {
    const id = String(sb.control.records(school, 'achievements')[n]!.id);
    sb.control.update(school, 'achievements', id, { comment: `changed ${n}` });
  };
  async function expectEqualsSandbox(path: string): Promise<void> {
    const ids = schools.map((s) => s.id);
    const expected = await expectedState(sb, ids, (id) => schools.find((s) => s.id === id)!.region);
    const actual = await currentTables(path);
    for (const [table, rows] of expected) {
      const got = (actual.get(table) ?? []).filter((r: Row) => ids.includes(String(r._school_id)));
      expect({ table, rows: canonical(got) }).toEqual({ table, rows: canonical(rows) });
    }
  }
  async function sql(path: string, text: string): Promise<void> {
    const inst = await DuckDBInstance.create(path);
    const conn = await inst.connect();
    try {
      await conn.run(text);
    } finally {
      conn.closeSync();
      inst.closeSync();
    }
  }
  const cli = (args: string[]): Promise<{ code: number | null; stderr: string }> =>
    new Promise((res) => {
      const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      child.once('close', (code) => res({ code, stderr }));
    });

  it('refuses before a full refresh, then loads without the file and equals the sandbox', async () => {
    const s = schools[0]!.id;
    await night();
    touch(s, 1);
    touch(schools[1]!.id, 2);
    const r2 = await night();
    touch(s, 3);
    await night();

    // R2's achievements file of school s is damaged after its run committed (present, garbage).
    const file = runEntries(dest, r2)
      .filter((t) => t.school_id === s && t.resource === 'achievements')
      .flatMap((t) => t.files)
      .find((f) => f.table === 'achievements')!;
    expect(file).toBeDefined();
    writeFileSync(join(dest, file.path), 'not a parquet file, not what run 2 wrote');
    const id = `${r2}/${s}/achievements`;

    // The load stops at R2 and says who, why and both ways out.
    const stuck = warehouseLoad({ dest, into: `duckdb:${db}` });
    await expect(stuck).rejects.toMatchObject({ code: 'E_STATE' });
    await expect(stuck).rejects.toThrow(
      new RegExp(
        `^run ${r2}, school ${s}, table achievements: ${file.path} cannot be loaded \\(.*checksum.*\\); .*restore the file as run ${r2} wrote it.*` +
          `or run school-export run --full-refresh --schools ${s} --resources achievements, then load with --supersede ${id}$`,
      ),
    );

    // Bad ids: one line, exit 2, before the export or the database is opened.
    const fresh = join(tmp.dir, 'never.duckdb');
    for (const [v, why] of [
      [`${r2}/${s}`, 'expected three parts'],
      [`yesterday/${s}/achievements`, 'is not a run id'],
      [`${r2}/../achievements`, 'is not a school id'],
      [`${r2}/${s}/achievement`, 'no table achievement'],
    ] as const) {
      await expect(warehouseLoad({ dest: join(tmp.dir, 'missing'), into: `duckdb:${fresh}`, supersede: [v] })).rejects.toMatchObject({
        code: 'E_USAGE',
        message: expect.stringContaining(why),
      });
    }
    expect(existsSync(fresh)).toBe(false);

    // No later full read of achievements at s yet: refused, exit 2, one line, nothing applied.
    const refusal = `${id}: no later full read of achievements at ${s}: run school-export run --full-refresh --schools ${s} --resources achievements first`;
    await expect(warehouseLoad({ dest, into: `duckdb:${db}`, supersede: [id] })).rejects.toMatchObject({
      code: 'E_USAGE',
      message: refusal,
    });
    const viaCli = await cli(['warehouse', 'load', '--dest', dest, '--into', `duckdb:${db}`, '--supersede', id]);
    // (progress lines before it say what was read)
    expect([viaCli.code, viaCli.stderr.split('\n').filter((l) => l.startsWith('school-export:'))]).toEqual([
      2,
      [`school-export: ${refusal}`],
    ]);
    expect(viaCli.stderr.endsWith(`school-export: ${refusal}\n`)).toBe(true);
    const applied = async (path: string) =>
      (await dump(path, 'SELECT DISTINCT run_id FROM _school_export_tasks ORDER BY 1')).map((r) => String(r.run_id));
    expect(await applied(db)).not.toContain(r2);
    expect(await dump(db, 'SELECT * FROM _school_export_superseded')).toEqual([]);

    // The static script (DuckDB rendering) stops at the file too; a row the user inserts is
    // refused the same way while no later full read exists.
    await expect(runStaticScript(dest, scriptDb, builtinTables())).rejects.toThrow();
    await sql(scriptDb, `INSERT INTO _school_export_superseded (run_id, school_id, table_name) VALUES ('${r2}', '${s}', 'achievements')`);
    await expect(runStaticScript(dest, scriptDb, builtinTables())).rejects.toThrow(
      `${id} (_school_export_superseded): no later full read of achievements at ${s}: run school-export run --full-refresh --schools ${s} --resources achievements first; nothing was loaded`,
    );
    // `warehouse load` refuses the same row (inserted by hand) with the same words.
    await sql(db, `INSERT INTO _school_export_superseded (run_id, school_id, table_name) VALUES ('${r2}', '${s}', 'achievements')`);
    await expect(warehouseLoad({ dest, into: `duckdb:${db}` })).rejects.toMatchObject({
      code: 'E_CONFIG',
      message: expect.stringContaining(refusal),
    });
    await sql(db, 'DELETE FROM _school_export_superseded');

    // The full refresh the message asks for; then the supersession is accepted and the load completes.
    const refresh = await night({ full_refresh: true, schools: [s], resources: ['achievements'] });
    const r = await warehouseLoad({ dest, into: `duckdb:${db}`, supersede: [`${id},${id}`] });
    expect(r.appliedRuns).toContain(r2);
    expect(r.appliedRuns).toContain(refresh);
    await expectEqualsSandbox(db);
    expect(await dump(db, 'SELECT run_id, school_id, table_name, superseded_by FROM _school_export_superseded')).toEqual([
      { run_id: r2, school_id: s, table_name: 'achievements', superseded_by: refresh },
    ]);
    // the task's other tables' files loaded (only its achievements file was left out)
    expect(await applied(db)).toContain(r2);

    // The static script with the user's row loads the same way.
    await runStaticScript(dest, scriptDb, builtinTables());
    await expectEqualsSandbox(scriptDb);

    // Later nights load without the flag: the row is kept.
    touch(s, 4);
    touch(schools[2]!.id, 5);
    await night();
    await warehouseLoad({ dest, into: `duckdb:${db}` });
    await runStaticScript(dest, scriptDb, builtinTables());
    await expectEqualsSandbox(db);
    await expectEqualsSandbox(scriptDb);
    expect((await dump(db, 'SELECT count(*)::INTEGER AS n FROM _school_export_superseded'))[0]).toEqual({ n: 1 });
  }, 180_000);
});
