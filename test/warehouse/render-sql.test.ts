import pkg from 'node-sql-parser';
import { describe, expect, it } from 'vitest';
import type { Manifest } from '../../src/manifest/types.ts';
import { buildPlan } from '../../src/warehouse/plan.ts';
import { bigQuerySchemaFiles } from '../../src/warehouse/render-bigquery.ts';
import { renderSql, renderSqlStatements } from '../../src/warehouse/render.ts';
import { DuckDBInstance } from '@duckdb/node-api';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dump, SCHEMAS, writeRun } from './fixtures.ts';

const { Parser } = pkg;
const parser = new Parser();

const file = (table: string, school: string, run: string, n: number) => ({
  table,
  path: `${table}/region=uk/school_id=${school}/${run}-${String(n).padStart(4, '0')}.parquet`,
  rows: 1,
  bytes: 10,
  sha256: 'x',
});
const MANIFESTS: Manifest[] = [
  {
    version: 1,
    run_id: '20240201T000000Z-0002',
    started_at: '2024-02-01T00:00:00.000000Z',
    finished_at: '2024-02-01T00:00:00.000000Z',
    format: 'parquet',
    status: 'partial',
    tasks: [
      {
        school_id: 'A1',
        region: 'uk',
        resource: 'achievements',
        status: 'committed',
        mode: 'incremental',
        files: [file('achievements', 'A1', '20240201T000000Z-0002', 1)],
        rows: { achievements: 1 },
      },
      {
        school_id: 'A1',
        region: 'uk',
        resource: 'deletions',
        status: 'committed',
        mode: 'incremental',
        files: [file('deletions', 'A1', '20240201T000000Z-0002', 2)],
        rows: { deletions: 1 },
      },
      {
        school_id: 'A2',
        region: 'uk',
        resource: 'achievements',
        status: 'failed',
        mode: 'incremental',
        files: [],
        rows: {},
        error: { code: 'E_HTTP_RETRIES', message: 'x' },
      },
    ],
    deletions: [],
  },
  {
    version: 1,
    run_id: '20240101T000000Z-0001',
    started_at: '2024-01-01T00:00:00.000000Z',
    finished_at: '2024-01-01T00:00:00.000000Z',
    format: 'parquet',
    status: 'ok',
    tasks: [
      {
        school_id: 'A1',
        region: 'uk',
        resource: 'achievements',
        status: 'committed',
        mode: 'full',
        files: [file('achievements', 'A1', '20240101T000000Z-0001', 1), file('achievement_students', 'A1', '20240101T000000Z-0001', 2)],
        rows: { achievements: 1, achievement_students: 1 },
      },
      {
        school_id: 'A1',
        region: 'uk',
        resource: 'school_permissions',
        status: 'committed',
        mode: 'full',
        files: [],
        rows: { school_permissions: 0 },
      },
    ],
    deletions: [],
  },
];

/**
 * node-sql-parser 5 cannot parse some statement forms these dialects have. Each is named here
 * and checked another way; every other statement must parse.
 *  - MERGE (both dialects): its USING (SELECT ...) source is parsed instead.
 *  - BigQuery LOAD DATA, CREATE SCHEMA; a CREATE TABLE with a JSON column (we map json to STRING, so none).
 *  - Snowflake COPY INTO, CREATE STAGE; CREATE TABLE with a VARIANT column (parsed with VARIANT read as VARCHAR).
 */
function parseAll(statements: string[], database: 'BigQuery' | 'Snowflake'): { parsed: number; checkedOtherwise: string[] } {
  let parsed = 0;
  const other: string[] = [];
  for (const s of statements) {
    if (s.startsWith('MERGE INTO')) {
      parser.astify(mergeSource(s), { database });
      other.push('MERGE');
    } else if (/^(LOAD DATA|COPY INTO|CREATE STAGE|CREATE SCHEMA)/.test(s)) {
      other.push(s.split(' ').slice(0, 2).join(' '));
    } else if (database === 'Snowflake' && / VARIANT[,)]/.test(s)) {
      parser.astify(s.replace(/ VARIANT([,)])/g, ' VARCHAR$1'), { database });
      other.push('CREATE TABLE (VARIANT)');
    } else {
      parser.astify(s, { database });
      parsed++;
    }
  }
  return { parsed, checkedOtherwise: [...new Set(other)].sort() };
}

/** The text inside `USING ( ... ) AS src`, by balanced parentheses. */
function mergeSource(merge: string): string {
  const start = merge.indexOf('USING (') + 'USING ('.length;
  let depth = 1;
  for (let i = start; i < merge.length; i++) {
    if (merge[i] === '(') depth++;
    if (merge[i] === ')' && --depth === 0) return merge.slice(start, i);
  }
  throw new Error('unbalanced MERGE source');
}

describe('renderSql', () => {
  it('BigQuery: parses statement by statement and matches the golden file', async () => {
    const opts = {
      dialect: 'bigquery' as const,
      location: 'gs://bucket/exports/',
      tables: SCHEMAS,
      dataset: 'schools_ds',
      manifests: MANIFESTS,
    };
    const statements = renderSqlStatements(opts);
    const r = parseAll(statements, 'BigQuery');
    expect(r.checkedOtherwise).toEqual(['CREATE SCHEMA', 'LOAD DATA', 'MERGE']);
    expect(r.parsed).toBe(statements.length - 1 - 3 - 5); // schema, 3 loads, 5 merges
    const sql = renderSql(opts);
    // Exactly the committed files of the manifests, in run order; never the failed task's.
    expect(sql).toContain(
      "LOAD DATA INTO `schools_ds._raw_achievements` FROM FILES (format = 'PARQUET', uris = ['gs://bucket/exports/achievements/region=uk/school_id=A1/20240101T000000Z-0001-0001.parquet', 'gs://bucket/exports/achievements/region=uk/school_id=A1/20240201T000000Z-0002-0001.parquet'])",
    );
    expect(sql).not.toMatch(/\*\.parquet/);
    await expect(sql).toMatchFileSnapshot('golden/bigquery.sql');
  });

  it('BigQuery: JSON schema files per table', async () => {
    const files = bigQuerySchemaFiles(buildPlan(SCHEMAS));
    expect(Object.keys(files)).toEqual([
      'achievements.json',
      'school_meta.json',
      'school_permissions.json',
      'deletions.json',
      'achievement_students.json',
    ]);
    const ach = JSON.parse(files['achievements.json']) as { name: string; type: string; mode: string }[];
    expect(ach.find((f) => f.name === 'updated_at')).toEqual({ name: 'updated_at', type: 'TIMESTAMP', mode: 'NULLABLE' });
    expect(ach.find((f) => f.name === '_school_id')).toEqual({ name: '_school_id', type: 'STRING', mode: 'REQUIRED' });
    await expect(files['achievements.json']).toMatchFileSnapshot('golden/bigquery-achievements.schema.json');
  });

  it('Snowflake: parses statement by statement and matches the golden file', async () => {
    const opts = { dialect: 'snowflake' as const, location: 's3://bucket/exports', tables: SCHEMAS, manifests: MANIFESTS };
    const statements = renderSqlStatements(opts);
    const r = parseAll(statements, 'Snowflake');
    expect(r.checkedOtherwise).toEqual(['COPY INTO', 'CREATE STAGE', 'CREATE TABLE (VARIANT)', 'MERGE']);
    const sql = renderSql(opts);
    expect(sql).toContain('FILE_FORMAT = (TYPE = PARQUET USE_LOGICAL_TYPE = TRUE) MATCH_BY_COLUMN_NAME = CASE_INSENSITIVE');
    expect(sql).toContain(
      "FROM @school_export_stage/achievements/ FILES = ('region=uk/school_id=A1/20240101T000000Z-0001-0001.parquet', 'region=uk/school_id=A1/20240201T000000Z-0002-0001.parquet')",
    );
    // The full tasks of run 1 are snapshots; incremental tasks and the deletions log are not.
    expect(sql).toContain(
      "VALUES ('20240101T000000Z-0001', 'A1', 'achievements'), ('20240101T000000Z-0001', 'A1', 'achievement_students'), ('20240101T000000Z-0001', 'A1', 'school_permissions')",
    );
    expect(sql).toContain('"TABLE" VARCHAR'); // a reserved word as a column name
    await expect(sql).toMatchFileSnapshot('golden/snowflake.sql');
  });

  it('DuckDB: the rendered script (with manifests) runs and builds the current state', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'wh-render-'));
    try {
      const a = (id: string, points: number, day: string) => ({ id, points, updated_at: `2024-01-${day}T00:00:00.000000Z`, house: 'red' });
      await writeRun(join(dir, 'x'), '20240101T000000Z-0001', 'parquet', [
        {
          school: 'A1',
          resource: 'achievements',
          mode: 'incremental',
          tables: { achievements: [a('A10', 1, '01'), a('A11', 1, '01')], achievement_students: [{ achievement_id: 'A10', id: 'A900' }] },
        },
      ]);
      await writeRun(join(dir, 'x'), '20240102T000000Z-0002', 'csv', [
        { school: 'A1', resource: 'achievements', mode: 'incremental', tables: { achievements: [a('A10', 2, '02')] } },
        {
          school: 'A1',
          resource: 'deletions',
          mode: 'incremental',
          tables: {
            deletions: [
              { type: 'achievement', id: 'A11', deleted_at: '2024-01-02T00:00:00.000000Z', detected_by: 'api', table: 'achievements' },
            ],
          },
        },
      ]);
      const db = join(dir, 'r.duckdb');
      const inst = await DuckDBInstance.create(db);
      const c = await inst.connect();
      const manifests = await Promise.all(
        ['20240101T000000Z-0001', '20240102T000000Z-0002'].map(
          async (r) => JSON.parse(await readFile(join(dir, 'x', '_manifests', `${r}.json`), 'utf8')) as Manifest,
        ),
      );
      for (const s of renderSqlStatements({ dialect: 'duckdb', location: join(dir, 'x'), tables: SCHEMAS, manifests })) await c.run(s);
      c.closeSync();
      inst.closeSync();
      expect(await dump(db, 'SELECT id, points, _extra::VARCHAR AS x FROM achievements')).toEqual([
        { id: 'A10', points: '2', x: '{"house":"red"}' },
      ]);
      expect(await dump(db, 'SELECT count(*)::INT AS n FROM achievement_students')).toEqual([{ n: 0 }]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('splits long file lists: 1,000 files per COPY, at most 10,000 URIs and ~600 kB per LOAD DATA', () => {
    const many = (n: number): Manifest => ({
      ...MANIFESTS[1],
      run_id: '20240301T000000Z-0003',
      tasks: [
        {
          school_id: 'A1',
          region: 'uk',
          resource: 'achievements',
          status: 'committed',
          mode: 'incremental',
          files: Array.from({ length: n }, (_, i) => file('achievements', 'A1', '20240301T000000Z-0003', i + 1)),
          rows: {},
        },
      ],
    });
    const copies = renderSqlStatements({ dialect: 'snowflake', location: 's3://bkt/x', tables: SCHEMAS, manifests: [many(2500)] }).filter(
      (s) => s.startsWith('COPY INTO'),
    );
    expect(copies.map((s) => s.split('.parquet').length - 1)).toEqual([1000, 1000, 500]);
    const loads = renderSqlStatements({ dialect: 'bigquery', location: 'gs://bkt/x', tables: SCHEMAS, manifests: [many(12000)] }).filter(
      (s) => s.startsWith('LOAD DATA'),
    );
    // ~85-character URIs: the statement size cap splits before the 10,000-URI cap does.
    const counts = loads.map((s) => s.split('.parquet').length - 1);
    expect(counts.reduce((a, b) => a + b)).toBe(12000);
    expect(counts.length).toBe(2);
    expect(Math.max(...counts)).toBeLessThanOrEqual(10000);
    expect(Math.max(...loads.map((s) => s.length))).toBeLessThan(1_000_000);
  });

  it('without manifests, loads glob the table folders and say so', () => {
    const sql = renderSql({ dialect: 'snowflake', location: 'gs://bucket/x', tables: SCHEMAS });
    expect(sql).toContain("URL = 'gcs://bucket/x/'");
    expect(sql).toContain("PATTERN = '.*[.]parquet'");
    expect(sql).toContain('No manifests given');
  });

  it('refuses locations a warehouse cannot load from', () => {
    expect(() => renderSql({ dialect: 'bigquery', location: 's3://bucket/x', tables: SCHEMAS })).toThrow(/Cloud Storage/);
    expect(() => renderSql({ dialect: 'snowflake', location: '/local/dir', tables: SCHEMAS })).toThrow(/s3:\/\//);
  });
});
