import { writeFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadIntoDuckDb } from '../../src/warehouse/duckdb-load.ts';
import { parseSupersede } from '../../src/warehouse/supersede.ts';
import { dirSource, dump, rewriteRunEntries, runStaticScript, SCHEMAS, writeRun } from './fixtures.ts';
import { ach, ACH_SQL, R1, R2, R3, R4 } from './scenarios.ts';

/**
 * What justifies superseding a task (issue 25 item 3), in both loaders: a committed full read
 * that began after the task's run, or an unchanged read whose content is held by a later run's
 * files; not an unchanged read whose content is the stuck task's own, nor a full read in pieces
 * that began before it.
 */
const R5 = '20240501T000000Z-0005';
const A1 = 'A1';
let dir: string;
let dest: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'wh-supersede-unit-'));
  dest = join(dir, 'exports');
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function insertRow(db: string): Promise<void> {
  const inst = await DuckDBInstance.create(db);
  const c = await inst.connect();
  try {
    await c.run(`INSERT INTO _school_export_superseded (run_id, school_id, table_name) VALUES ('${R2}', '${A1}', 'achievements')`);
  } finally {
    c.closeSync();
    inst.closeSync();
  }
}

describe('superseding a stuck task', () => {
  it('parses RUN/SCHOOL/TABLE lists, repeated and comma-separated, once each', () => {
    const run = '20261122T010000.120Z-3f9a';
    expect(parseSupersede([`${run}/A1/achievements,${run}/A2/achievements`, `${run}/A1/achievements`], ['achievements'])).toEqual([
      { runId: run, schoolId: 'A1', table: 'achievements' },
      { runId: run, schoolId: 'A2', table: 'achievements' },
    ]);
  });

  it('is justified by a later full read only: both loaders agree', async () => {
    const task = { runId: R2, schoolId: A1, table: 'achievements' };
    const load = join(dir, 'load.duckdb');
    const script = join(dir, 'script.duckdb');
    const src = dirSource(dest, { local: true });
    await writeRun(dest, R1, 'parquet', [
      { school: A1, resource: 'achievements', mode: 'full', tables: { achievements: [ach('A10', 1, '2024-01-01')] } },
    ]);
    const m2 = await writeRun(dest, R2, 'parquet', [
      { school: A1, resource: 'achievements', mode: 'incremental', tables: { achievements: [ach('A10', 2, '2024-02-01')] } },
    ]);
    // R2's file damaged: both loaders stop at it
    await writeFile(join(dest, m2.tasks[0]!.files[0]!.path), 'garbage');
    // R3: unchanged, its content being R2's own files; R4: a read in pieces that began in R1
    await writeRun(dest, R3, 'parquet', [{ school: A1, resource: 'achievements', mode: 'full', status: 'unchanged', tables: {} }]);
    rewriteRunEntries(dest, R3, (t) => (t.unchanged_since = R2));
    await writeRun(dest, R4, 'parquet', [
      {
        school: A1,
        resource: 'achievements',
        mode: 'full',
        checkpoint: { snapshot: R1, seq: 1, final: true },
        tables: { achievements: [ach('A10', 2, '2024-02-01')] },
      },
    ]);
    const refusal = `${R2}/${A1}/achievements: no later full read of achievements at ${A1}: run school-export run --full-refresh --schools ${A1} --resources achievements first`;
    await expect(loadIntoDuckDb({ sink: src, dbPath: load, tables: SCHEMAS, supersede: [task] })).rejects.toMatchObject({
      code: 'E_USAGE',
      message: refusal,
    });
    await expect(runStaticScript(dest, script)).rejects.toThrow(/could not be read|parquet|magic/i);
    await insertRow(script);
    await expect(runStaticScript(dest, script)).rejects.toThrow(`${R2}/${A1}/achievements (_school_export_superseded): no later full read`);

    // R5: unchanged, its content held by R4's files (after R2): accepted
    await writeRun(dest, R5, 'parquet', [{ school: A1, resource: 'achievements', mode: 'full', status: 'unchanged', tables: {} }]);
    rewriteRunEntries(dest, R5, (t) => (t.unchanged_since = R4));
    const r = await loadIntoDuckDb({ sink: src, dbPath: load, tables: SCHEMAS, supersede: [task] });
    expect(r.appliedRuns).toEqual([R1, R2, R3, R4, R5]);
    expect(await dump(load, 'SELECT superseded_by FROM _school_export_superseded')).toEqual([{ superseded_by: R5 }]);
    await runStaticScript(dest, script);
    const state = await dump(load, ACH_SQL);
    expect(state).toEqual([expect.objectContaining({ id: 'A10', points: '2', _run_id: R4 })]);
    expect(await dump(script, ACH_SQL)).toEqual(state);
    // asked again: already recorded, nothing to do
    await expect(loadIntoDuckDb({ sink: src, dbPath: load, tables: SCHEMAS, supersede: [task] })).resolves.toMatchObject({
      appliedTasks: 0,
    });
    // a task that is not pending (R1, loaded) cannot be superseded
    await expect(loadIntoDuckDb({ sink: src, dbPath: load, tables: SCHEMAS, supersede: [{ ...task, runId: R1 }] })).rejects.toMatchObject({
      code: 'E_USAGE',
      message: expect.stringContaining('nothing to supersede'),
    });
  });
});
