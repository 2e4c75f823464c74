import { existsSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadIntoDuckDb } from '../../src/warehouse/duckdb-load.ts';
import { scratchPath } from '../../src/warehouse/duckdb-scratch.ts';
import { dirSource, dump, SCHEMAS, writeRun, writeTableFile, meta, type Format } from './fixtures.ts';
import { ach, ACH_SQL, del, ids, R1, R2, R3, R4, stu, STU_SQL, writeFirstTwoRuns, writeLaterRuns } from './scenarios.ts';

let dir: string;
let dest: string;
let db: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'wh-load-'));
  dest = join(dir, 'export');
  db = join(dir, 'wh.duckdb');
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Rows of the staged history (_raw_ tables) of achievements and their students. */
const RAW_COUNTS = 'SELECT (SELECT count(*) FROM _raw_achievements)::INT AS a, (SELECT count(*) FROM _raw_achievement_students)::INT AS s';

/** The current-state tables the scenarios check, as sorted rows. */
async function currentTablesOf(path: string) {
  return {
    ach: await dump(path, ACH_SQL),
    stu: await dump(path, STU_SQL),
    perms: await dump(path, 'SELECT _school_id, identity, _run_id FROM school_permissions ORDER BY ALL'),
    dels: await dump(path, 'SELECT _school_id, type, id, restored_at::VARCHAR AS r FROM deletions ORDER BY ALL'),
  };
}

describe.each<Format>(['ndjson', 'ndjson.gz', 'csv', 'parquet'])('loadIntoDuckDb from %s files', (format) => {
  it('builds current state across runs, applies only new runs, and is idempotent', async () => {
    await writeFirstTwoRuns(dest, format);
    // A file a crash left behind: on disk, in no manifest.
    const stray = join(dest, `achievements/region=uk/school_id=A1/20240115T000000Z-0009-0001.${format}`);
    const strayRows = meta([ach('A66', 6, '2024-01-15')], 'A1', '20240115T000000Z-0009', '2024-01-15T00:00:00.000000Z');
    await writeTableFile(stray, SCHEMAS[0], strayRows, format);

    const sink = dirSource(dest, { local: true });
    const first = await loadIntoDuckDb({ sink, dbPath: db, tables: SCHEMAS });
    expect(first.appliedRuns).toEqual([R1, R2]);

    const achRows = await dump(db, ACH_SQL);
    // A11 deleted; A12 deleted; A10 updated at A1; A2's A10 untouched by A2's failed task; stray A66 absent.
    expect(ids(achRows)).toEqual(['A1/A10', 'A1/A13', 'A2/A10']);
    expect(achRows[0]).toMatchObject({
      points: '5',
      score: 2.5,
      comment: 'with, "quotes"\nand a newline',
      details: null,
      updated_at: '2024-02-01 00:00:00+00',
      _run_id: R2,
    });
    // An undeclared field (drift) lands in _extra whatever the format.
    expect(achRows[1]).toMatchObject({ comment: '', parents_notified: true, details: '{"p":4}', _extra: '{"house":"red"}' });
    expect(achRows[0]).toMatchObject({ _extra: null });
    expect(achRows[2]).toMatchObject({ points: '7', _run_id: R1 });
    // Children follow their parent's current version: A901 went with A10's old version, A902 with deleted A11.
    expect(await dump(db, STU_SQL)).toEqual([{ _school_id: 'A1', achievement_id: 'A10', id: 'A900', _run_id: R2 }]);
    expect(await dump(db, 'SELECT _school_id, online FROM school_meta')).toEqual([{ _school_id: 'A1', online: false }]);
    expect(first.tables).toMatchObject({ achievements: 3, achievement_students: 1, school_meta: 1, school_permissions: 2, deletions: 2 });

    // Loading again changes nothing.
    const before = await dump(db, ACH_SQL);
    const again = await loadIntoDuckDb({ sink, dbPath: db, tables: SCHEMAS });
    expect(again.appliedRuns).toEqual([]);
    expect(await dump(db, ACH_SQL)).toEqual(before);
    // Staged history is compacted: A1/A10's superseded run-1 version is dropped (6 rows staged).
    expect(await dump(db, 'SELECT count(*)::INT AS n FROM _raw_achievements')).toEqual([{ n: 5 }]);

    // A later load applies only the new runs.
    await writeLaterRuns(dest, format);
    const later = await loadIntoDuckDb({ sink, dbPath: db, tables: SCHEMAS });
    expect(later.appliedRuns).toEqual([R3, R4]);
    const after = await dump(db, ACH_SQL);
    // A12 restored; A13 missing from the full snapshot (migration): gone; A14 new.
    expect(ids(after)).toEqual(['A1/A10', 'A1/A12', 'A1/A14', 'A2/A10']);
    expect(after.find((r) => r.id === 'A10')).toMatchObject({ _run_id: R4, points: '5' });
    expect(await dump(db, STU_SQL)).toEqual([
      { _school_id: 'A1', achievement_id: 'A10', id: 'A900', _run_id: R4 },
      { _school_id: 'A1', achievement_id: 'A14', id: 'A903', _run_id: R4 },
    ]);
    expect(await dump(db, 'SELECT identity FROM school_permissions ORDER BY ALL')).toEqual([{ identity: 'achievements.read' }]);
    expect(await dump(db, 'SELECT DISTINCT run_id FROM _school_export_tasks WHERE merged_at IS NOT NULL ORDER BY ALL')).toEqual(
      [R1, R2, R3, R4].map((run_id) => ({ run_id })),
    );
  });
});

describe('loadIntoDuckDb rules', () => {
  it('keeps a row updated after its deletion and removes purged schools', async () => {
    await writeRun(dest, R1, 'ndjson', [
      {
        school: 'A1',
        resource: 'achievements',
        mode: 'incremental',
        tables: { achievements: [ach('A10', 1, '2024-03-01'), ach('A11', 1, '2024-01-01')] },
      },
      { school: 'A2', resource: 'achievements', mode: 'incremental', tables: { achievements: [ach('A10', 1, '2024-01-01')] } },
      // A10 was deleted before its latest update: the update wins. A11: deleted after, gone.
      {
        school: 'A1',
        resource: 'deletions',
        mode: 'incremental',
        tables: { deletions: [del('A10', '2024-02-01'), del('A11', '2024-02-01')] },
      },
    ]);
    await writeRun(dest, R2, 'ndjson', [], [{ school_id: 'A2', region: 'uk', reason: 'revoked', files_removed: 1 }]);
    await loadIntoDuckDb({ sink: dirSource(dest, { local: true }), dbPath: db, tables: SCHEMAS });
    expect(ids(await dump(db, ACH_SQL))).toEqual(['A1/A10']);
  });

  it('brings back a row read again after a snapshot-detected deletion (no restored_at)', async () => {
    await writeRun(dest, R1, 'ndjson', [
      {
        school: 'A1',
        resource: 'achievements',
        mode: 'full',
        tables: { achievements: [ach('A10', 1, '2024-01-01'), ach('A11', 1, '2024-01-01')] },
      },
    ]);
    // Run 2's snapshot missed A11 (an upstream glitch): the pipeline derived a deletion.
    await writeRun(dest, R2, 'ndjson', [
      { school: 'A1', resource: 'achievements', mode: 'full', tables: { achievements: [ach('A10', 1, '2024-01-01')] } },
      {
        school: 'A1',
        resource: 'deletions',
        mode: 'incremental',
        tables: { deletions: [{ ...del('A11', '2024-02-01'), detected_by: 'snapshot' }] },
      },
    ]);
    const sink = dirSource(dest, { local: true });
    await loadIntoDuckDb({ sink, dbPath: db, tables: SCHEMAS });
    expect(ids(await dump(db, ACH_SQL))).toEqual(['A1/A10']);
    // Run 3's snapshot has A11 again, unchanged (same updated_at, older than the deletion).
    await writeRun(dest, R3, 'ndjson', [
      {
        school: 'A1',
        resource: 'achievements',
        mode: 'full',
        tables: { achievements: [ach('A10', 1, '2024-01-01'), ach('A11', 1, '2024-01-01')] },
      },
    ]);
    await loadIntoDuckDb({ sink, dbPath: db, tables: SCHEMAS });
    expect(ids(await dump(db, ACH_SQL))).toEqual(['A1/A10', 'A1/A11']);
  });

  it('refuses a manifest with an unsafe file path or school id', async () => {
    const bad = async (task: Record<string, unknown>) => {
      await rm(dest, { recursive: true, force: true });
      await mkdir(join(dest, '_manifests'), { recursive: true });
      const m = {
        version: 1,
        run_id: R1,
        started_at: '',
        finished_at: '',
        format: 'ndjson',
        status: 'ok',
        deletions: [],
        tasks: [
          { school_id: 'A1', region: 'uk', resource: 'achievements', status: 'committed', mode: 'full', files: [], rows: {}, ...task },
        ],
      };
      await writeFile(join(dest, '_manifests', `${R1}.json`), JSON.stringify(m));
      return loadIntoDuckDb({ sink: dirSource(dest, { local: true }), dbPath: db, tables: SCHEMAS });
    };
    const file = (path: string) => ({ files: [{ table: 'achievements', path, rows: 1, bytes: 1, sha256: '' }] });
    await expect(bad(file('achievements/../../etc/passwd'))).rejects.toMatchObject({
      code: 'E_STATE',
      message: expect.stringContaining('unsafe'),
    });
    await expect(bad(file('schools/region=uk/school_id=A1/x.ndjson'))).rejects.toMatchObject({
      code: 'E_STATE',
      message: expect.stringContaining('misplaced'),
    });
    await expect(bad({ school_id: "A1'); DROP TABLE achievements; --" })).rejects.toMatchObject({
      code: 'E_STATE',
      message: expect.stringContaining('unsafe school id'),
    });
    expect(await dump(db, 'SELECT count(*)::INT AS n FROM _school_export_tasks')).toEqual([{ n: 0 }]);
  });

  it('gives the same tables with compacted and with full staged history', async () => {
    const sink = dirSource(dest, { local: true });
    const full = join(dir, 'full.duckdb');
    const all = currentTablesOf;
    await writeFirstTwoRuns(dest, 'ndjson');
    await loadIntoDuckDb({ sink, dbPath: db, tables: SCHEMAS });
    await loadIntoDuckDb({ sink, dbPath: full, tables: SCHEMAS, keepHistory: true });
    expect(await all(db)).toEqual(await all(full));
    await writeLaterRuns(dest, 'ndjson');
    // And a run committed late, older than everything applied, re-sending A13 and A11 stale.
    await writeRun(dest, '20231201T000000Z-0000', 'ndjson', [
      {
        school: 'A1',
        resource: 'achievements',
        mode: 'incremental',
        tables: { achievements: [ach('A13', 9, '2023-12-01'), ach('A11', 9, '2023-12-01')], achievement_students: [stu('A13', 'A950')] },
      },
    ]);
    await loadIntoDuckDb({ sink, dbPath: db, tables: SCHEMAS });
    await loadIntoDuckDb({ sink, dbPath: full, tables: SCHEMAS, keepHistory: true });
    const compacted = await all(db);
    expect(compacted).toEqual(await all(full));
    expect(ids(compacted.ach)).toEqual(['A1/A10', 'A1/A12', 'A1/A14', 'A2/A10']);
    const rawCount = async (path: string) => (await dump(path, RAW_COUNTS))[0];
    // Per key: the latest version and the last run's row; children of kept parent rows only.
    expect(await rawCount(db)).toEqual({ a: 6, s: 3 });
    expect(await rawCount(full)).toEqual({ a: 11, s: 7 });
  });

  it.each<Format>(['csv', 'parquet'])(
    'gives the same tables whether files and schools are listed at once or table by table, in batches of one school (%s)',
    async (format) => {
      const sink = dirSource(dest, { local: true });
      const apart = join(dir, 'apart.duckdb');
      const all = async (path: string) => ({ ...(await currentTablesOf(path)), raw: await dump(path, RAW_COUNTS) });
      // listAtOnce 0: every batch lists its files, and the merge counts its schools, table by table
      const oneByOne = { listAtOnce: 0, batchRows: 1, mergeRows: 1 };
      await writeFirstTwoRuns(dest, format);
      await loadIntoDuckDb({ sink, dbPath: db, tables: SCHEMAS });
      await loadIntoDuckDb({ sink, dbPath: apart, tables: SCHEMAS, ...oneByOne });
      expect(await all(apart)).toEqual(await all(db));
      await writeLaterRuns(dest, format);
      await loadIntoDuckDb({ sink, dbPath: db, tables: SCHEMAS });
      await loadIntoDuckDb({ sink, dbPath: apart, tables: SCHEMAS, ...oneByOne });
      const later = await all(db);
      expect(await all(apart)).toEqual(later);
      expect(ids(later.ach).length).toBeGreaterThan(0);
    },
  );

  it.each([
    ['at once', {}],
    ['table by table', { listAtOnce: 0 }],
  ])('checks staged row counts against the manifests %s (checksums not verified), applying nothing of the run', async (_how, opts) => {
    await writeFirstTwoRuns(dest, 'parquet');
    await loadIntoDuckDb({ sink: dirSource(dest, { local: true }), dbPath: db, tables: SCHEMAS });
    await writeLaterRuns(dest, 'parquet');
    // R4's achievements file of A1 rewritten with one row where its manifest lists three
    await writeTableFile(
      join(dest, `achievements/region=uk/school_id=A1/${R4}-0001.parquet`),
      SCHEMAS[0]!,
      meta([ach('A66', 6, '2024-04-01')], 'A1', R4, '2024-04-01T00:00:00.000000Z'),
      'parquet',
    );
    const load = loadIntoDuckDb({ sink: dirSource(dest, { local: true }), dbPath: db, tables: SCHEMAS, verifyChecksums: false, ...opts });
    await expect(load).rejects.toThrow(`achievements files of run ${R4}, school A1 hold 1 rows, the manifests list 3`);
    expect(ids(await dump(db, ACH_SQL))).not.toContain('A1/A66');
    expect(await dump(db, `SELECT count(*)::INT AS n FROM _school_export_tasks WHERE run_id = '${R4}'`)).toEqual([{ n: 0 }]);
  });

  it('keeps the rows scope-masked columns are filled from when compacting, nightly reads with a lesser token included', async () => {
    const sink = dirSource(dest, { local: true });
    const full = join(dir, 'full.duckdb');
    const masked = { scope_masked: { achievements: ['comment'] } };
    const read = (runId: string, comment: string | null, updated: string, extra = {}) =>
      writeRun(dest, runId, 'ndjson', [
        {
          school: 'A1',
          resource: 'achievements',
          mode: 'full',
          tables: {
            achievements: [ach('A10', 1, updated, { comment }), ach('A11', 2, '2024-01-01', { comment: comment && `${comment}!` })],
          },
          ...extra,
        },
      ]);
    await read(R1, 'first', '2024-01-01');
    await read(R2, null, '2024-01-01', masked);
    await loadIntoDuckDb({ sink, dbPath: db, tables: SCHEMAS });
    await read(R3, null, '2024-01-01', masked);
    await loadIntoDuckDb({ sink, dbPath: db, tables: SCHEMAS });
    await read(R4, null, '2024-04-01', masked);
    await loadIntoDuckDb({ sink, dbPath: db, tables: SCHEMAS });
    await loadIntoDuckDb({ sink, dbPath: full, tables: SCHEMAS, keepHistory: true });
    const sql = 'SELECT id, comment, _run_id FROM achievements ORDER BY id';
    expect(await dump(db, sql)).toEqual([
      { id: 'A10', comment: null, _run_id: R4 },
      { id: 'A11', comment: 'first!', _run_id: R4 },
    ]);
    expect(await dump(db, sql)).toEqual(await dump(full, sql));
    // Nightly masked reads of an unchanged row do not pile up: one row per set of masked columns.
    expect(await dump(db, `SELECT count(*)::INT AS n FROM _raw_achievements WHERE id = 'A11'`)).toEqual([{ n: 2 }]);
  });

  it('applies runs committed late (a shard that finished after a later run was loaded)', async () => {
    await writeRun(dest, R2, 'ndjson', [
      { school: 'A1', resource: 'achievements', mode: 'incremental', tables: { achievements: [ach('A10', 2, '2024-02-01')] } },
    ]);
    const sink = dirSource(dest, { local: true });
    await loadIntoDuckDb({ sink, dbPath: db, tables: SCHEMAS });
    await writeRun(dest, R1, 'ndjson', [
      {
        school: 'A1',
        resource: 'achievements',
        mode: 'incremental',
        tables: { achievements: [ach('A10', 1, '2024-01-01'), ach('A11', 1, '2024-01-01')] },
      },
    ]);
    const r = await loadIntoDuckDb({ sink, dbPath: db, tables: SCHEMAS });
    expect(r.appliedRuns).toEqual([R1]);
    const rows = await dump(db, ACH_SQL);
    expect(rows.map((x) => [x.id, x.points])).toEqual([
      ['A10', '2'],
      ['A11', '1'],
    ]);
  });

  it('loads through a sink without local paths (S3) and refuses a file changed after commit', async () => {
    await writeFirstTwoRuns(dest, 'parquet');
    const remote = dirSource(dest, { local: false });
    const r = await loadIntoDuckDb({ sink: remote, dbPath: db, tables: SCHEMAS });
    expect(r.appliedRuns).toEqual([R1, R2]);
    expect(ids(await dump(db, ACH_SQL))).toEqual(['A1/A10', 'A1/A13', 'A2/A10']);

    await writeLaterRuns(dest, 'parquet');
    // A streaming source: each file is copied to a temporary file in a stream.
    const streamed = join(dir, 'streamed.duckdb');
    const s = await loadIntoDuckDb({ sink: dirSource(dest, { local: false, stream: true }), dbPath: streamed, tables: SCHEMAS });
    expect(s.appliedRuns).toEqual([R1, R2, R3, R4]);
    expect(ids(await dump(streamed, ACH_SQL))).toEqual(['A1/A10', 'A1/A12', 'A1/A14', 'A2/A10']);
    // Overwrite a listed file of run 4 with other content: its checksum no longer matches.
    const rel = `achievements/region=uk/school_id=A1/${R4}-0001.parquet`;
    await writeTableFile(
      join(dest, rel),
      SCHEMAS[0],
      meta([ach('A66', 6, '2024-04-01')], 'A1', R4, '2024-04-01T00:00:00.000000Z'),
      'parquet',
    );
    // the error says which run, school and table, why, and what to do (issue 25 item 3)
    const stuck = loadIntoDuckDb({ sink: remote, dbPath: db, tables: SCHEMAS });
    await expect(stuck).rejects.toMatchObject({ code: 'E_STATE', message: expect.stringContaining('checksum') });
    await expect(stuck).rejects.toThrow(
      new RegExp(
        `^run ${R4}, school A1, table achievements: ${rel} cannot be loaded \\(.*checksum.*\\); .*restore the file as run ${R4} wrote it`,
      ),
    );
    // Run 3 applied, run 4 rolled back as a whole.
    expect(await dump(db, 'SELECT DISTINCT run_id FROM _school_export_tasks ORDER BY ALL')).toEqual(
      [R1, R2, R3].map((run_id) => ({ run_id })),
    );
    expect(ids(await dump(db, ACH_SQL))).toEqual(['A1/A10', 'A1/A12', 'A1/A13', 'A2/A10']);
  });

  // Each CSV or NDJSON reader holds a buffer of 32 MiB or more, one per thread: a machine with
  // many cores must not run DuckDB out of memory (at 128 MiB, eight threads did).
  it.each<Format>(['ndjson', 'ndjson.gz', 'csv', 'parquet'])('loads %s files on many threads within its memory', async (format) => {
    const schools = Array.from({ length: 48 }, (_, i) => `A${100 + i}`);
    await writeRun(
      dest,
      R1,
      format,
      schools.map((school) => ({
        school,
        resource: 'achievements',
        mode: 'full',
        tables: { achievements: [ach('A10', 1, '2024-01-01')] },
      })),
    );
    const r = await loadIntoDuckDb({ sink: dirSource(dest, { local: true }), dbPath: db, tables: SCHEMAS, threads: 16 });
    expect(r.tables.achievements).toBe(schools.length);
  });

  // A merge holds about 32 MiB per DuckDB thread: on 16 threads within 64 MiB it ran out of
  // memory (this test, before the limit capped the threads).
  it('merges on a machine of many cores within its memory: the limit caps the threads', async () => {
    const schools = Array.from({ length: 120 }, (_, i) => `A${100 + i}`);
    const rows = Array.from({ length: 30 }, (_, j) => ach(`A${j}`, j, '2024-01-01'));
    const sink = dirSource(dest, { local: true });
    const opts = { sink, dbPath: db, tables: SCHEMAS, threads: 16, memoryMiB: 64 };
    await writeRun(
      dest,
      R1,
      'parquet',
      schools.map((school) => ({ school, resource: 'achievements', mode: 'full', tables: { achievements: rows } })),
    );
    await loadIntoDuckDb(opts);
    await writeRun(
      dest,
      R2,
      'parquet',
      schools.map((school) => ({
        school,
        resource: 'achievements',
        mode: 'incremental',
        tables: { achievements: [ach('A1', 99, '2024-02-01')] },
      })),
    );
    const r = await loadIntoDuckDb(opts);
    expect(r.appliedRuns).toEqual([R2]);
    expect(r.tables.achievements).toBe(schools.length * rows.length);
    expect(await dump(db, "SELECT count(*)::INT AS n FROM achievements WHERE id = 'A1' AND points = '99'")).toEqual([
      { n: schools.length },
    ]);
  });

  // At 10,000 schools the manifest tables (~220,000 rows) and the pending sets made from them
  // held 84 MB of DuckDB's memory as TEMP tables (uncompressed, pinned unless spilled).
  it('keeps its working tables in a scratch database beside the warehouse, removed after the load (a stale one replaced)', async () => {
    const schools = Array.from({ length: 40 }, (_, i) => `A${100 + i}`);
    await writeRun(
      dest,
      R1,
      'parquet',
      schools.map((school) => ({ school, resource: 'achievements', mode: 'full', tables: { achievements: [ach('A1', 1, '2024-01-01')] } })),
    );
    const scratch = scratchPath(db);
    expect(scratch).not.toBe(db);
    // what a load killed half-way leaves: not a database at all
    await writeFile(scratch, 'left by a killed load');
    await writeFile(`${scratch}.wal`, 'left by a killed load');
    const seen: number[] = [];
    const r = await loadIntoDuckDb({
      sink: dirSource(dest, { local: true }),
      dbPath: db,
      tables: SCHEMAS,
      beforeStage: async () => {
        seen.push(existsSync(scratch) ? statSync(scratch).size : -1);
      },
    });
    expect(r.tables.achievements).toBe(schools.length);
    // the manifest tables were there while files were staged (a database file with tables in it)
    expect(seen.length).toBeGreaterThan(0);
    for (const size of seen) expect(size).toBeGreaterThan(0);
    expect(existsSync(scratch)).toBe(false);
    expect(existsSync(`${scratch}.wal`)).toBe(false);
    // and nothing of them is left in the warehouse
    expect(await dump(db, "SELECT count(*)::INT AS n FROM duckdb_tables() WHERE table_name LIKE '\\_se\\_%' ESCAPE '\\'")).toEqual([
      { n: 0 },
    ]);
    expect(scratchPath(':memory:')).toBe(':memory:');
  });

  // Each load adds the columns a table's schema gained since the database was made, to both of
  // its tables, and only those (one query finds them).
  it('adds a column the schema gained since the database was made to both tables, keeping their rows', async () => {
    const sink = dirSource(dest, { local: true });
    await writeRun(dest, R1, 'parquet', [
      { school: 'A1', resource: 'achievements', mode: 'full', tables: { achievements: [ach('A10', 1, '2024-01-01')] } },
    ]);
    await loadIntoDuckDb({ sink, dbPath: db, tables: SCHEMAS });
    // the database of a version whose achievements had no comment
    for (const table of ['achievements', '_raw_achievements']) await dump(db, `ALTER TABLE ${table} DROP COLUMN comment`);
    const hasComment =
      "SELECT table_name FROM duckdb_columns() WHERE column_name = 'comment' AND table_name LIKE '%achievements' ORDER BY 1";
    expect(await dump(db, hasComment)).toEqual([]);

    await writeRun(dest, R2, 'parquet', [
      { school: 'A1', resource: 'achievements', mode: 'incremental', tables: { achievements: [ach('A11', 2, '2024-02-01')] } },
    ]);
    const r = await loadIntoDuckDb({ sink, dbPath: db, tables: SCHEMAS });
    expect(r.appliedRuns).toEqual([R2]);
    expect(await dump(db, hasComment)).toEqual([{ table_name: '_raw_achievements' }, { table_name: 'achievements' }]);
    expect(await dump(db, 'SELECT id, points, comment FROM achievements ORDER BY id')).toEqual([
      { id: 'A10', points: '1', comment: null },
      { id: 'A11', points: '2', comment: 'cA11' },
    ]);
  });
});
