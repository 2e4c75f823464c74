import pkg from 'node-sql-parser';
import { describe, expect, it } from 'vitest';
import { builtinTables } from '../../src/warehouse/commands.ts';
import { DIALECT_NAMES } from '../../src/warehouse/dialects.ts';
import { buildPlan } from '../../src/warehouse/plan.ts';
import { bigQuerySchemaFiles } from '../../src/warehouse/render-bigquery.ts';
import { renderSql, renderSqlStatements } from '../../src/warehouse/render.ts';
import { SCHEMAS } from './fixtures.ts';

const { Parser } = pkg;
const parser = new Parser();
type Database = 'BigQuery' | 'Snowflake';

/** The text inside `USING ( ... ) AS src`, by balanced parentheses. */
function balanced(text: string, open: number): string {
  let depth = 1;
  for (let i = open; i < text.length; i++) {
    if (text[i] === '(') depth++;
    if (text[i] === ')' && --depth === 0) return text.slice(open, i);
  }
  throw new Error(`unbalanced: ${text.slice(0, 80)}`);
}

/**
 * node-sql-parser 5 parses plain statements of both dialects but not their scripting or some
 * statement forms. Each form it cannot parse is named here and the SQL inside it is parsed
 * instead; every other statement must parse whole. What is left (DECLARE, CREATE SCHEMA /
 * STAGE / FILE FORMAT / EXTERNAL TABLE, transactions, the dynamic LOAD DATA / COPY text) is
 * checked by the golden files and, for the logic, by running the DuckDB rendering.
 */
function parseAll(statements: string[], database: Database): { parsed: number; checkedOtherwise: string[] } {
  let parsed = 0;
  const other = new Set<string>();
  const parse = (sql: string): void => {
    try {
      // Not in the parser's grammar: BigQuery's FIRST_VALUE(x IGNORE NULLS), parsed as FIRST_VALUE(x),
      // and IS NOT DISTINCT FROM (both dialects), parsed as =.
      const known = sql.replace(/ IS NOT DISTINCT FROM /g, ' = ');
      parser.astify(database === 'BigQuery' ? known.replace(/ IGNORE NULLS\) OVER/g, ') OVER') : known, { database });
    } catch (e) {
      throw new Error(`${database} cannot parse: ${sql.slice(0, 300)}\n${(e as Error).message.slice(0, 200)}`, { cause: e });
    }
    parsed++;
  };
  for (const s of statements) {
    let m: RegExpExecArray | null;
    if (s.startsWith('MERGE INTO')) {
      parse(balanced(s, s.indexOf('USING (') + 'USING ('.length));
      other.add('MERGE');
    } else if ((m = /^DELETE FROM (\S+)( \w+)? WHERE/.exec(s))) {
      // The parser knows no DELETE with an alias (nor, for Snowflake, any DELETE ... WHERE): the
      // same FROM and WHERE are parsed as a SELECT.
      parse(`SELECT 1 FROM ${m[1]}${m[2] ?? ''} WHERE${s.slice(m[0].length)}`);
      other.add('DELETE');
    } else if ((m = /^SET se_message = \(/.exec(s)) || (m = /^SELECT COUNT\(\*\) INTO :check_rows FROM \(/.exec(s))) {
      parse(balanced(s, m[0].length));
      other.add('check (SET or SELECT INTO, then RAISE)');
    } else if (/^IF \(check_rows > 0\) THEN\s+RAISE \w+;\s+END IF$/.test(s)) {
      other.add('check (SET or SELECT INTO, then RAISE)');
    } else if ((m = /^FOR f IN \(/.exec(s))) {
      parse(balanced(s, m[0].length));
      other.add('FOR ... EXECUTE IMMEDIATE');
    } else if (/^LET c_\w+ CURSOR FOR /.test(s)) {
      parse(s.replace(/^LET c_\w+ CURSOR FOR /, ''));
      other.add('LET CURSOR');
    } else if (/^FOR f IN c_\w+ DO/.test(s)) {
      other.add('FOR ... EXECUTE IMMEDIATE');
    } else if (/^CREATE TABLE/.test(s) && / CLUSTER BY /.test(s)) {
      // Clustering options are not in the parser's grammar; VARIANT is read as VARCHAR.
      parse(s.replace(/ CLUSTER BY .*$/, '').replace(/ VARIANT([,)])/g, ' VARCHAR$1'));
      other.add('CREATE TABLE ... CLUSTER BY');
    } else if (/^CREATE OR REPLACE TEMPORARY TABLE \S+ AS SELECT .* FROM @/.test(s)) {
      other.add('SELECT FROM @stage');
    } else if (
      /^(DECLARE|CREATE SCHEMA|CREATE STAGE|CREATE FILE FORMAT|CREATE OR REPLACE EXTERNAL TABLE|BEGIN TRANSACTION|COMMIT|DROP TABLE IF EXISTS)/.test(
        s,
      )
    ) {
      other.add(s.split(' ').slice(0, 2).join(' '));
    } else {
      parse(database === 'Snowflake' ? s.replace(/ VARIANT([,)])/g, ' VARCHAR$1') : s);
    }
  }
  return { parsed, checkedOtherwise: [...other].sort() };
}

/** The statements of the Snowflake Scripting block, one by one. */
function snowflakeBlock(statements: string[]): { outer: string[]; body: string[]; declare: string[] } {
  const block = statements[statements.length - 1]!;
  expect(block.startsWith('EXECUTE IMMEDIATE $$\nDECLARE\n')).toBe(true);
  const [, declare = '', rest = ''] = /^EXECUTE IMMEDIATE \$\$\nDECLARE\n([\s\S]*?)\nBEGIN\n([\s\S]*)$/.exec(block) ?? [];
  const body = rest.slice(0, rest.lastIndexOf('\nEXCEPTION\n'));
  return {
    outer: statements.slice(0, -1),
    declare: declare.split('\n').map((l) => l.trim()),
    // Statements of the block start at two spaces; their inner lines are indented deeper.
    body: body
      .split(/;\n(?= {2}(?!END )\S)/)
      .map((s) => s.trim().replace(/;$/, ''))
      .filter((s) => !s.startsWith('RETURN')),
  };
}

describe('the static load scripts', () => {
  it('BigQuery: every statement (or the SQL inside it) parses, and the script matches the golden file', async () => {
    const opts = { dialect: 'bigquery' as const, location: 'gs://bucket/exports/', tables: SCHEMAS, dataset: 'schools_ds' };
    const statements = renderSqlStatements(opts);
    const r = parseAll(statements, 'BigQuery');
    expect(r.checkedOtherwise).toEqual([
      'BEGIN TRANSACTION',
      'COMMIT TRANSACTION',
      'CREATE OR',
      'CREATE SCHEMA',
      'CREATE TABLE ... CLUSTER BY',
      'DECLARE se_message',
      'DELETE',
      'DROP TABLE',
      'FOR ... EXECUTE IMMEDIATE',
      'MERGE',
      'check (SET or SELECT INTO, then RAISE)',
    ]);
    const sql = renderSql(opts);
    // The manifests are read in the warehouse; files are named by the pending list, never by a glob.
    expect(sql).toContain("uris = ['gs://bucket/exports/_manifests/*'], field_delimiter = '\\t', quote = ''");
    expect(sql).toContain("EXECUTE IMMEDIATE CONCAT('LOAD DATA INTO `schools_ds._stage_achievements` FROM FILES (format = ''PARQUET''");
    expect(sql).toContain('CLUSTER BY `_school_id`, `achievement_id`, `id`');
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
    const ach = JSON.parse(files['achievements.json']!) as { name: string; type: string; mode: string }[];
    expect(ach.find((f) => f.name === 'updated_at')).toEqual({ name: 'updated_at', type: 'TIMESTAMP', mode: 'NULLABLE' });
    expect(ach.find((f) => f.name === '_school_id')).toEqual({ name: '_school_id', type: 'STRING', mode: 'REQUIRED' });
    await expect(files['achievements.json']).toMatchFileSnapshot('golden/bigquery-achievements.schema.json');
  });

  it('Snowflake: every statement of the script and of its block (or the SQL inside it) parses, and it matches the golden file', async () => {
    const opts = { dialect: 'snowflake' as const, location: 's3://bucket/exports', tables: SCHEMAS };
    const statements = renderSqlStatements(opts);
    const { outer, body, declare } = snowflakeBlock(statements);
    const r = parseAll([...outer, ...body], 'Snowflake');
    expect(r.checkedOtherwise).toEqual([
      'BEGIN TRANSACTION',
      'COMMIT',
      'CREATE FILE',
      'CREATE STAGE',
      'CREATE TABLE ... CLUSTER BY',
      'DELETE',
      'FOR ... EXECUTE IMMEDIATE',
      'LET CURSOR',
      'MERGE',
      'SELECT FROM @stage',
      'check (SET or SELECT INTO, then RAISE)',
    ]);
    // Every check raises an exception the block declares.
    const raised = [...new Set(body.join('\n').match(/RAISE \w+/g))].map((x) => x.slice('RAISE '.length)).sort();
    expect(raised.length).toBeGreaterThan(3);
    expect(
      declare
        .filter((l) => / EXCEPTION \(-20\d\d\d, '/.test(l))
        .map((l) => l.split(' ')[0])
        .sort(),
    ).toEqual(raised);
    const sql = renderSql(opts);
    expect(sql).toContain('FILE_FORMAT = (TYPE = PARQUET USE_LOGICAL_TYPE = TRUE) MATCH_BY_COLUMN_NAME = CASE_INSENSITIVE');
    expect(sql).toContain("stmt := 'COPY INTO _stage_achievements FROM @school_export_stage/achievements/ FILES = (' || f.files || ')");
    expect(sql).toContain('FORCE = TRUE');
    expect(sql).toContain('"TABLE" VARCHAR'); // a reserved word as a column name
    expect(sql).toContain('CLUSTER BY (_school_id, achievement_id, id)');
    await expect(sql).toMatchFileSnapshot('golden/snowflake.sql');
  });

  it('is static: its size depends on the tables only, far under BigQuery’s 1,024,000-character query limit', () => {
    // The script never names a school, run or file, so 5,000 schools × 30 nightly runs render the
    // same text as an empty export: measured for the built-in tables of every dialect.
    for (const dialect of DIALECT_NAMES) {
      const location = dialect === 'duckdb' ? '/exports' : dialect === 'bigquery' ? 'gs://bucket/exports' : 's3://bucket/exports';
      const sql = renderSql({ dialect, location, tables: builtinTables() });
      expect(sql.length, dialect).toBeLessThan(1_024_000 / 4);
      expect(sql).not.toMatch(/A\d{4}|\d{8}T\d{6}/);
    }
  });

  it('refuses locations and names a warehouse cannot use', () => {
    expect(() => renderSql({ dialect: 'bigquery', location: 's3://bucket/x', tables: SCHEMAS })).toThrow(/Cloud Storage/);
    expect(() => renderSql({ dialect: 'bigquery', location: "gs://bucket/x'; DROP", tables: SCHEMAS })).toThrow(
      /not a valid Cloud Storage/,
    );
    expect(() => renderSql({ dialect: 'snowflake', location: '/local/dir', tables: SCHEMAS })).toThrow(/s3:\/\//);
    expect(() => renderSql({ dialect: 'snowflake', location: 's3://b/x', dataset: 'a b', tables: SCHEMAS })).toThrow(/letters, digits/);
    expect(() => renderSql({ dialect: 'duckdb', location: 's3://b/x', tables: SCHEMAS })).toThrow(/warehouse load/);
  });
});
