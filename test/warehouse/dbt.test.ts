import { Ajv } from 'ajv';
import { DuckDBInstance } from '@duckdb/node-api';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runExport } from '../../src/pipeline/run.ts';
import { RESOURCES } from '../../src/resources/index.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { warehouseDbt, warehouseLoad } from '../../src/warehouse/commands.ts';
import { DIALECT_NAMES } from '../../src/warehouse/dialects.ts';
import { sandboxConfig, tempDir } from '../integration/helpers.ts';

/**
 * `warehouse dbt` writes a sources file that (1) has the structure dbt reads (checked against a
 * JSON Schema of dbt's documented source properties, parsed as YAML), (2) names every column of
 * every current-state table with its type, and (3) declares tests that hold on a real load: the
 * SQL dbt's unique, not_null and relationships tests compile to runs against DuckDB loaded from
 * the sandbox, finds no failure, and does find the failures planted afterwards.
 */

interface SourceTable {
  name: string;
  freshness?: unknown;
  columns: { name: string; data_type: string; description: string; data_tests?: string[] }[];
  data_tests?: Record<string, { column_name: string; to?: string; field?: string }>[];
}
interface SourcesFile {
  version: 2;
  sources: { name: string; schema?: string; loaded_at_field: string; freshness: unknown; tables: SourceTable[] }[];
}

const schema = JSON.parse(readFileSync(new URL('dbt/sources.schema.json', import.meta.url), 'utf8')) as object;

/** What dbt's generic tests compile to (dbt-core's default__test_* macros), with the test wrapper dbt runs them in. */
function compiled(kind: string, model: string, column: string, args: { to?: string; field?: string } = {}): string {
  const source = (ref: string): string => {
    const m = /^source\('([^']+)', '([^']+)'\)$/.exec(ref);
    if (!m) throw new Error(`not a source(): ${ref}`);
    return `"main"."${m[2]}"`;
  };
  const body =
    kind === 'not_null'
      ? `select ${column}\nfrom ${model}\nwhere ${column} is null`
      : kind === 'unique'
        ? `select\n    ${column} as unique_field,\n    count(*) as n_records\nfrom ${model}\nwhere ${column} is not null\ngroup by ${column}\nhaving count(*) > 1`
        : `with child as (\n    select ${column} as from_field\n    from ${model}\n    where ${column} is not null\n),\n\nparent as (\n` +
          `    select ${args.field!} as to_field\n    from ${source(args.to!)}\n)\n\nselect\n    from_field\nfrom child\nleft join parent\n` +
          `    on child.from_field = parent.to_field\nwhere parent.to_field is null`;
  return `select\n      count(*) as failures,\n      count(*) != 0 as should_warn,\n      count(*) != 0 as should_error\n    from (\n${body}\n    ) dbt_internal_test`;
}

/** Every test the file declares, compiled for its table. */
function compiledTests(file: SourcesFile): { name: string; sql: string }[] {
  const out: { name: string; sql: string }[] = [];
  for (const t of file.sources[0]!.tables) {
    const model = `"main"."${t.name}"`;
    for (const c of t.columns)
      for (const kind of c.data_tests ?? []) out.push({ name: `${kind}(${t.name}.${c.name})`, sql: compiled(kind, model, c.name) });
    for (const test of t.data_tests ?? []) {
      const [kind, args] = Object.entries(test)[0]!;
      out.push({ name: `${kind}(${t.name}: ${args.column_name})`, sql: compiled(kind, model, args.column_name, args) });
    }
  }
  return out;
}

describe('warehouse dbt', () => {
  let sb: Sandbox;
  const tmp = tempDir('wh-dbt-');
  const db = join(tmp.dir, 'wh.duckdb');

  beforeAll(async () => {
    sb = await startSandbox({ seed: 41, schools: 3, achievementsPerSchool: 50 });
    const dest = join(tmp.dir, 'exports');
    expect((await runExport(sandboxConfig(sb, dest, { format: 'ndjson' }), { token: sb.tokens.full })).failures).toEqual([]);
    await warehouseLoad({ dest, into: `duckdb:${db}` });
  });
  afterAll(async () => {
    await sb?.close();
    tmp.cleanup();
  });

  async function query(sql: string): Promise<Record<string, unknown>[]> {
    const inst = await DuckDBInstance.create(db);
    const c = await inst.connect();
    try {
      return (await c.runAndReadAll(sql)).getRowObjectsJS() as Record<string, unknown>[];
    } finally {
      c.closeSync();
      inst.closeSync();
    }
  }

  it('writes a sources file of the structure dbt reads, for every dialect', () => {
    const validate = new Ajv({ allErrors: true }).compile(schema);
    for (const dialect of DIALECT_NAMES) {
      const text = warehouseDbt({ dialect, dataset: 'analytics' });
      const file = parse(text) as SourcesFile;
      expect(validate(file), `${dialect}: ${JSON.stringify(validate.errors)}`).toBe(true);
      // dbt >= 1.8 reads data_tests; tests is its deprecated name
      expect(text).toMatch(/^\s+data_tests:/m);
      expect(text).not.toMatch(/^\s+tests:/m);
      const source = file.sources[0]!;
      expect(source).toMatchObject({ name: 'school_export', schema: 'analytics', loaded_at_field: '_extracted_at' });
      expect(source.freshness).toEqual({ warn_after: { count: 26, period: 'hour' }, error_after: { count: 52, period: 'hour' } });
      // Every table has a not_null key and a unique key; child tables relate to their parent.
      for (const t of source.tables) {
        expect(t.columns.find((c) => c.name === '_school_id')?.data_tests, t.name).toEqual(['not_null']);
        expect(
          t.data_tests?.some((x) => 'unique' in x),
          t.name,
        ).toBe(true);
        expect(
          t.columns.every((c) => c.description.length > 10 && c.data_type.length > 0),
          t.name,
        ).toBe(true);
      }
      const students = source.tables.find((t) => t.name === 'achievement_students')!;
      expect(students.data_tests).toContainEqual({
        relationships: {
          column_name: "_school_id || '|' || achievement_id",
          to: "source('school_export', 'achievements')",
          field: "_school_id || '|' || id",
        },
      });
    }
    // A file the schema refuses: a test in the wrong place.
    expect(validate({ version: 2, sources: [{ name: 's', tables: [{ name: 't', unique: 'id' }] }] })).toBe(false);
  });

  it('names every column of every current-state table with the type the warehouse has', async () => {
    const file = parse(warehouseDbt({ dialect: 'duckdb' })) as SourcesFile;
    const cols = await query(
      `SELECT table_name, column_name, data_type FROM information_schema.columns WHERE table_schema = 'main' AND table_name NOT LIKE '\\_%' ESCAPE '\\' ORDER BY table_name, ordinal_position`,
    );
    const declared = file.sources[0]!.tables.flatMap((t) =>
      t.columns.map((c) => ({
        table_name: t.name,
        column_name: c.name,
        data_type: c.data_type.replace('TIMESTAMPTZ', 'TIMESTAMP WITH TIME ZONE'),
      })),
    );
    const sort = (rows: Record<string, unknown>[]) =>
      rows.map((r) => `${String(r.table_name)}.${String(r.column_name)} ${String(r.data_type)}`).sort();
    expect(sort(declared)).toEqual(sort(cols));
    // Tables read incrementally are quiet when nothing changed: freshness is checked on the others.
    const fresh = file.sources[0]!.tables.filter((t) => t.freshness !== null).map((t) => t.name);
    expect(fresh).toEqual(RESOURCES.filter((r) => !r.incremental).map((r) => r.name));
  });

  it('its unique, not_null and relationships tests, compiled as dbt does, hold on a real load and catch planted failures', async () => {
    const file = parse(warehouseDbt({ dialect: 'duckdb' })) as SourcesFile;
    const tests = compiledTests(file);
    expect(tests.length).toBeGreaterThan(30);
    for (const t of tests)
      expect({ test: t.name, failures: Number((await query(t.sql))[0]?.failures) }).toEqual({ test: t.name, failures: 0 });
    const failures = async (name: string) => Number((await query(tests.find((t) => t.name === name)!.sql))[0]?.failures);
    // The tests can fail: a duplicated key, a child without its parent, a null key.
    const [a] = await query(`SELECT achievement_id FROM achievement_students LIMIT 1`);
    const inst = await DuckDBInstance.create(db);
    const c = await inst.connect();
    // the duplicate is of another achievement than the one deleted (LIMIT 1 picks any row: when it
    // picked that one, the delete took both copies and the planted duplicate was gone)
    await c.run(`INSERT INTO achievements SELECT * FROM achievements WHERE id <> '${String(a!.achievement_id)}' LIMIT 1`);
    await c.run(`DELETE FROM achievements WHERE id = '${String(a!.achievement_id)}'`);
    await c.run(`UPDATE school_permissions SET identity = NULL WHERE rowid = (SELECT min(rowid) FROM school_permissions)`);
    c.closeSync();
    inst.closeSync();
    expect(await failures("unique(achievements: _school_id || '|' || id)")).toBe(1);
    expect(await failures("relationships(achievement_students: _school_id || '|' || achievement_id)")).toBeGreaterThan(0);
    expect(await failures('not_null(school_permissions.identity)')).toBe(1);
  });
});
