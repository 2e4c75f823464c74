import { mkdtemp, rm, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Manifest } from '../../src/manifest/types.ts';
import type { Row } from '../../src/table.ts';
import { loadIntoDuckDb } from '../../src/warehouse/duckdb-load.ts';
import { dirSource, dump, meta, runStaticScript, SCHEMAS, writeRun, writeTableFile, type TaskSpec } from './fixtures.ts';
import { ach, ACH_SQL, del, ids, R1, R2, R3, R4, stu, STU_SQL, writeFirstTwoRuns, writeLaterRuns } from './scenarios.ts';

/**
 * Every rule of the warehouse, checked against both loaders: `warehouse load` (TypeScript driving
 * DuckDB) and the static script that BigQuery and Snowflake run, rendered in the DuckDB dialect
 * and run in DuckDB. Both record applied task keys in the warehouse; both must give the same
 * tables.
 */
type Load = (dest: string, db: string, opts?: { requirePseudonymised?: boolean }) => Promise<void>;
const LOADERS: [string, Load][] = [
  [
    'warehouse load',
    async (dest, db, opts = {}) => {
      await loadIntoDuckDb({ sink: dirSource(dest, { local: true }), dbPath: db, tables: SCHEMAS, ...opts });
    },
  ],
  ['static script (DuckDB rendering)', (dest, db, opts = {}) => runStaticScript(dest, db, SCHEMAS, opts)],
];

const TABLES = ['achievements', 'achievement_students', 'school_meta', 'school_permissions', 'deletions'];
const RAW_COUNT = `SELECT (SELECT count(*) FROM _raw_achievements)::INT AS a, (SELECT count(*) FROM _raw_achievement_students)::INT AS s`;

let dir: string;
let dest: string;
let db: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'wh-loaders-'));
  dest = join(dir, 'export');
  db = join(dir, 'wh.duckdb');
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Every row of every table (current state and staged) of a school. */
async function rowsOfSchool(path: string, school: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const t of TABLES) {
    for (const name of [t, `_raw_${t}`]) {
      const [r] = await dump(path, `SELECT count(*)::INT AS n FROM "${name}" WHERE _school_id = '${school}'`);
      out[name] = Number(r?.n);
    }
  }
  return out;
}

describe.each(LOADERS)('%s', (_name, load) => {
  it('builds the current state across runs, and loading again changes nothing', async () => {
    await writeFirstTwoRuns(dest, 'parquet');
    await load(dest, db);
    expect(ids(await dump(db, ACH_SQL))).toEqual(['A1/A10', 'A1/A13', 'A2/A10']);
    expect(await dump(db, STU_SQL)).toEqual([{ _school_id: 'A1', achievement_id: 'A10', id: 'A900', _run_id: R2 }]);
    const before = await dump(db, ACH_SQL);
    await load(dest, db);
    expect(await dump(db, ACH_SQL)).toEqual(before);
    expect(await dump(db, RAW_COUNT)).toEqual([{ a: 5, s: 2 }]);

    await writeLaterRuns(dest, 'parquet');
    await load(dest, db);
    expect(ids(await dump(db, ACH_SQL))).toEqual(['A1/A10', 'A1/A12', 'A1/A14', 'A2/A10']);
    expect(await dump(db, STU_SQL)).toEqual([
      { _school_id: 'A1', achievement_id: 'A10', id: 'A900', _run_id: R4 },
      { _school_id: 'A1', achievement_id: 'A14', id: 'A903', _run_id: R4 },
    ]);
    expect(await dump(db, 'SELECT identity FROM school_permissions ORDER BY ALL')).toEqual([{ identity: 'achievements.read' }]);
    expect(await dump(db, 'SELECT DISTINCT run_id FROM _school_export_tasks WHERE merged_at IS NOT NULL ORDER BY ALL')).toEqual(
      [R1, R2, R3, R4].map((run_id) => ({ run_id })),
    );
  });

  it('applies each task once: parts of a run still going, then its manifest listing them again', async () => {
    const a1 = { school: 'A1', resource: 'achievements', mode: 'full' as const };
    const a2 = { school: 'A2', resource: 'achievements', mode: 'full' as const };
    const m1 = { ...a1, tables: { achievements: [ach('A10', 1, '2024-01-01')], achievement_students: [stu('A10', 'A900')] } };
    const m2 = { ...a2, tables: { achievements: [ach('A20', 2, '2024-01-01')], achievement_students: [] } };
    await writeRun(dest, R1, 'parquet', [m1], { part: 1 });
    await load(dest, db);
    expect(ids(await dump(db, ACH_SQL))).toEqual(['A1/A10']);
    await writeRun(dest, R1, 'parquet', [m2], { part: 2 });
    await load(dest, db);
    // The run finishes: its manifest lists both tasks again and the parts are removed.
    await writeRun(dest, R1, 'parquet', [m1, m2]);
    await unlink(join(dest, '_manifests', R1, 'part-00001.json'));
    await load(dest, db);
    await load(dest, db);
    expect(ids(await dump(db, ACH_SQL))).toEqual(['A1/A10', 'A2/A20']);
    // Staged once: no duplicate rows of the same task.
    expect(await dump(db, RAW_COUNT)).toEqual([{ a: 2, s: 1 }]);
    expect(await dump(db, 'SELECT school_id, resource, seq::INT AS seq FROM _school_export_tasks ORDER BY ALL')).toEqual([
      { school_id: 'A1', resource: 'achievements', seq: 0 },
      { school_id: 'A2', resource: 'achievements', seq: 0 },
    ]);
  });

  it('applies a shard that committed after a later run was loaded, and a killed run’s parts', async () => {
    // Shard 1 (started second) finishes first and is loaded.
    await writeRun(dest, '20240101T000002Z-0002-s1of2', 'parquet', [
      { school: 'A2', resource: 'achievements', mode: 'full', tables: { achievements: [ach('A20', 1, '2024-01-01')] } },
    ]);
    await load(dest, db);
    // A later run of shard 1 is killed after one task: only its part remains.
    await writeRun(
      dest,
      '20240102T000000Z-0003-s1of2',
      'parquet',
      [{ school: 'A2', resource: 'achievements', mode: 'incremental', tables: { achievements: [ach('A21', 1, '2024-01-02')] } }],
      { part: 1 },
    );
    await load(dest, db);
    // Shard 0 started first (a lower run id) and finishes last.
    await writeRun(dest, '20240101T000001Z-0001-s0of2', 'parquet', [
      { school: 'A1', resource: 'achievements', mode: 'full', tables: { achievements: [ach('A10', 1, '2024-01-01')] } },
    ]);
    await load(dest, db);
    expect(ids(await dump(db, ACH_SQL))).toEqual(['A1/A10', 'A2/A20', 'A2/A21']);
  });

  it('checkpoint pieces: every piece loads; the snapshot applies only from the final piece, as of the run the read began', async () => {
    await writeRun(dest, R1, 'parquet', [
      {
        school: 'A1',
        resource: 'achievements',
        mode: 'full',
        tables: { achievements: [ach('A10', 1, '2024-01-01'), ach('A11', 1, '2024-01-01'), ach('A12', 1, '2024-01-01')] },
      },
    ]);
    await load(dest, db);
    // Run 2 begins a long full read and is killed after its first piece (a part, not final).
    const piece0 = {
      school: 'A1',
      resource: 'achievements',
      mode: 'full' as const,
      checkpoint: { snapshot: R2, seq: 0, final: false },
      tables: { achievements: [ach('A10', 2, '2024-02-01'), ach('A13', 1, '2024-02-01')] },
    };
    await writeRun(dest, R2, 'parquet', [piece0], { part: 1 });
    await load(dest, db);
    // A partial snapshot removes nothing: A11 and A12 were not read yet.
    expect(ids(await dump(db, ACH_SQL))).toEqual(['A1/A10', 'A1/A11', 'A1/A12', 'A1/A13']);
    expect(await dump(db, `SELECT points FROM achievements WHERE id = 'A10'`)).toEqual([{ points: '2' }]);
    // Run 3 resumes the read and completes it: A12 read, A11 is gone upstream.
    await writeRun(dest, R3, 'parquet', [
      {
        school: 'A1',
        resource: 'achievements',
        mode: 'full',
        checkpoint: { snapshot: R2, seq: 1, final: true },
        tables: { achievements: [ach('A12', 1, '2024-01-01')] },
      },
    ]);
    // Run 2's manifest appears too (interrupted), listing its piece again.
    await writeRun(dest, R2, 'parquet', [piece0]);
    await load(dest, db);
    // Rows last seen before run 2 began are gone; rows of both pieces stay.
    expect(ids(await dump(db, ACH_SQL))).toEqual(['A1/A10', 'A1/A12', 'A1/A13']);
    expect(await dump(db, `SELECT count(*)::INT AS n FROM _raw_achievements WHERE _run_id = '${R2}'`)).toEqual([{ n: 2 }]);
  });

  it('scope-masked nulls never replace values read with the scope for the same version; a newer version replaces them', async () => {
    const row = (comment: string | null, updated: string) =>
      ach('A10', 3, updated, { comment, parents_notified: comment === null ? null : true });
    const full = (runId: string, comment: string | null, updated: string, masked: boolean) =>
      writeRun(dest, runId, 'parquet', [
        {
          school: 'A1',
          resource: 'achievements',
          mode: 'full',
          tables: { achievements: [row(comment, updated)], achievement_students: [stu('A10', `S${runId.slice(-1)}`)] },
          ...(masked ? { scope_masked: { achievements: ['comment', 'parents_notified'] } } : {}),
        },
      ]);
    const state = () => dump(db, `SELECT comment, parents_notified, _run_id FROM achievements`);
    await full(R1, 'kind words', '2024-01-01', false);
    await load(dest, db);
    // The same version read again with a token lacking the scope: the latest read is the row
    // (its children come with it), and the masked columns keep the values read with the scope.
    await full(R2, null, '2024-01-01', true);
    await load(dest, db);
    expect(await state()).toEqual([{ comment: 'kind words', parents_notified: true, _run_id: R2 }]);
    expect(await dump(db, 'SELECT id FROM achievement_students')).toEqual([{ id: 'S2' }]);
    // A read with the scope from a run that started earlier but committed late: values still kept.
    await full('20231231T000000Z-0000', 'other words', '2024-01-01', false);
    await load(dest, db);
    expect(await state()).toEqual([{ comment: 'kind words', parents_notified: true, _run_id: R2 }]);
    // A newer version replaces the value even when masked: the row changed upstream.
    await full(R3, null, '2024-03-01', true);
    await load(dest, db);
    expect(await state()).toEqual([{ comment: null, parents_notified: null, _run_id: R3 }]);
    // Two tokens, each without a different scope: each column comes from the read that had it.
    const partial = (runId: string, masked: string, values: Partial<Row>) =>
      writeRun(dest, runId, 'parquet', [
        {
          school: 'A2',
          resource: 'achievements',
          mode: 'incremental',
          tables: { achievements: [ach('A20', 1, '2024-03-01', values)] },
          scope_masked: { achievements: [masked] },
        },
      ]);
    await partial('20240310T000000Z-0005', 'comment', { comment: null, parents_notified: false });
    await partial('20240311T000000Z-0006', 'parents_notified', { comment: 'both kept', parents_notified: null });
    // When every read of a version lacked the scope, the latest read's value stands.
    await partial('20240312T000000Z-0007', 'comment', { id: 'A21', comment: 'as read', parents_notified: true });
    await load(dest, db);
    expect(await dump(db, `SELECT id, comment, parents_notified FROM achievements WHERE _school_id = 'A2' ORDER BY id`)).toEqual([
      { id: 'A20', comment: 'both kept', parents_notified: false },
      { id: 'A21', comment: 'as read', parents_notified: true },
    ]);
  });

  it('a purge leaves no row of the school in any table, and tasks of runs that started before it never load', async () => {
    const school = (s: string, runTag: string): TaskSpec[] => [
      {
        school: s,
        resource: 'achievements',
        mode: 'full' as const,
        tables: { achievements: [ach(`A${runTag}`, 1, '2024-01-01')], achievement_students: [stu(`A${runTag}`, 'A900')] },
      },
      { school: s, resource: 'school_meta', mode: 'full' as const, tables: { school_meta: [{ online: true, approved: true }] } },
      {
        school: s,
        resource: 'school_permissions',
        mode: 'full' as const,
        tables: { school_permissions: [{ identity: 'achievements.read', approved: true }] },
      },
      { school: s, resource: 'deletions', mode: 'incremental' as const, tables: { deletions: [del('A99', '2024-01-01')] } },
    ];
    await writeRun(dest, R1, 'parquet', [...school('A1', '10'), ...school('A2', '20')]);
    await load(dest, db);
    expect(Object.values(await rowsOfSchool(db, 'A2')).every((n) => n > 0)).toBe(true);
    const purge = '20240201T000000Z-purge-ab12';
    await writeRun(dest, purge, 'parquet', [], { purged: [{ school_id: 'A2', region: 'uk', reason: 'accessRevoked', files_removed: 9 }] });
    // A run that started before the purge commits a part after it: never loaded.
    await writeRun(dest, '20240115T000000Z-0009', 'parquet', school('A2', '29'), { part: 1 });
    await load(dest, db);
    expect(await rowsOfSchool(db, 'A2')).toEqual(
      Object.fromEntries(
        TABLES.flatMap((t) => [
          [t, 0],
          [`_raw_${t}`, 0],
        ]),
      ),
    );
    expect(ids(await dump(db, ACH_SQL))).toEqual(['A1/A10']);
    // Re-approved later: a run after the purge brings the school back.
    await writeRun(dest, R3, 'parquet', school('A2', '30'));
    await load(dest, db);
    expect(ids(await dump(db, ACH_SQL))).toEqual(['A1/A10', 'A2/A30']);
  });

  it('--require-pseudonymised refuses a run whose manifest lacks the policy, loading nothing of it', async () => {
    const policy: Manifest['personal_data'] = { person_id: 'pseudonymise', direct_identifier: 'drop', free_text: 'drop' };
    const task = (id: string) => ({
      school: 'A1',
      resource: 'achievements',
      mode: 'incremental' as const,
      tables: { achievements: [ach(id, 1, '2024-01-01')] },
    });
    await writeRun(dest, R1, 'parquet', [task('A10')], { personal_data: policy });
    await load(dest, db, { requirePseudonymised: true });
    await writeRun(dest, R2, 'parquet', [task('A11')], { personal_data: { ...policy, person_id: 'keep' } });
    await writeRun(dest, R3, 'parquet', [task('A12')], { personal_data: policy });
    await expect(load(dest, db, { requirePseudonymised: true })).rejects.toThrow(
      new RegExp(`run ${R2} was not pseudonymised .*nothing was loaded`),
    );
    expect(ids(await dump(db, ACH_SQL))).toEqual(['A1/A10']);
    await load(dest, db);
    expect(ids(await dump(db, ACH_SQL))).toEqual(['A1/A10', 'A1/A11', 'A1/A12']);
  });

  it('a file changed after its run committed fails the load and applies nothing of it', async () => {
    await writeFirstTwoRuns(dest, 'parquet');
    await load(dest, db);
    await writeLaterRuns(dest, 'parquet');
    const rel = `achievements/region=uk/school_id=A1/${R4}-0001.parquet`;
    await writeTableFile(
      join(dest, rel),
      SCHEMAS[0]!,
      meta([ach('A66', 6, '2024-04-01')], 'A1', R4, '2024-04-01T00:00:00.000000Z'),
      'parquet',
    );
    await expect(load(dest, db)).rejects.toThrow(/checksum|rows, the manifests list 3/);
    expect(ids(await dump(db, ACH_SQL))).not.toContain('A1/A66');
    expect(await dump(db, `SELECT count(*)::INT AS n FROM _school_export_tasks WHERE run_id = '${R4}'`)).toEqual([{ n: 0 }]);
  });
});

describe('both loaders', () => {
  it('give the same tables for the same export', async () => {
    await writeFirstTwoRuns(dest, 'parquet');
    await writeLaterRuns(dest, 'parquet');
    await writeRun(dest, '20231201T000000Z-0000', 'parquet', [
      {
        school: 'A1',
        resource: 'achievements',
        mode: 'incremental',
        tables: { achievements: [ach('A13', 9, '2023-12-01'), ach('A11', 9, '2023-12-01')], achievement_students: [stu('A13', 'A950')] },
      },
    ]);
    const other = join(dir, 'static.duckdb');
    await LOADERS[0]![1](dest, db);
    await LOADERS[1]![1](dest, other);
    for (const t of TABLES) {
      const sql = `SELECT * EXCLUDE (_extra), _extra::VARCHAR AS x FROM "${t}" ORDER BY ALL`;
      expect({ t, rows: await dump(other, sql) }).toEqual({ t, rows: await dump(db, sql) });
      const raw = `SELECT * EXCLUDE (_extra), _extra::VARCHAR AS x FROM "_raw_${t}" ORDER BY ALL`;
      expect({ t, raw: await dump(other, raw) }).toEqual({ t, raw: await dump(db, raw) });
    }
  });
});
