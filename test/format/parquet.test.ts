import { createWriteStream } from 'node:fs';
import { mkdtemp, open, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatByName, isoToMicros, PARQUET_WRITERS } from '../../src/format/index.ts';
import type { FormatOptions } from '../../src/format/index.ts';
import type { Row, TableSchema } from '../../src/table.ts';
import { fixtureTable } from './helpers.ts';

let dir: string;
let con: DuckDBConnection;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'format-parquet-'));
  con = await (await DuckDBInstance.create(':memory:')).connect();
});
afterAll(async () => {
  con?.closeSync();
  await rm(dir, { recursive: true, force: true });
});

async function writeParquetWith(name: string, schema: TableSchema, rows: Row[], opts: FormatOptions = {}) {
  const path = join(dir, `${name}-${opts.parquetWriter ?? 'default'}.parquet`);
  const w = formatByName('parquet').open(schema, createWriteStream(path), opts);
  await w.write(rows.slice(0, 1));
  await w.write(rows.slice(1));
  await w.finish();
  return { path, w };
}

async function query(sql: string) {
  return (await con.runAndReadAll(sql)).getRowObjectsJson();
}

const DUCK_TYPE: Record<string, string> = {
  string: 'VARCHAR',
  json: 'VARCHAR',
  integer: 'BIGINT',
  double: 'DOUBLE',
  boolean: 'BOOLEAN',
  timestamp: 'TIMESTAMP WITH TIME ZONE',
};

describe.each(PARQUET_WRITERS)('parquet (%s writer)', (writer) => {
  const writeParquet = (name: string, schema: TableSchema, rows: Row[], opts: FormatOptions = {}) =>
    writeParquetWith(name, schema, rows, { parquetWriter: writer, ...opts });

  it.each([
    ['schools', 'schools'],
    ['achievements', 'achievements'],
    ['achievements', 'achievement_students'],
    ['assessment_results', 'assessment_results'],
    ['school_acl', 'school_acl'],
    ['deletions', 'deletions'],
  ])('%s/%s reads back in DuckDB with declared types and equal values', async (res, table) => {
    const { schema, rows } = fixtureTable(res, table);
    const { path, w } = await writeParquet(table, schema, rows);
    expect(w.rowsWritten).toBe(rows.length);
    expect(w.bytesWritten).toBe((await stat(path)).size);

    const described = await query(`DESCRIBE SELECT * FROM read_parquet('${path}')`);
    expect(described.map((d) => `${d.column_name}:${d.column_type}`)).toEqual(schema.columns.map((c) => `${c.name}:${DUCK_TYPE[c.type]}`));

    // timestamps compared as microseconds since the epoch: the exact instant, not a rendering
    const select = schema.columns
      .map((c) => (c.type === 'timestamp' ? `epoch_us("${c.name}")::VARCHAR AS "${c.name}"` : `"${c.name}"`))
      .join(', ');
    const back = await query(`SELECT ${select} FROM read_parquet('${path}')`);
    const declared = new Set(schema.columns.map((c) => c.name));
    rows.forEach((row, i) => {
      const extra: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(row)) if (!declared.has(k)) extra[k] = v;
      for (const c of schema.columns) {
        const got = back[i][c.name];
        if (c.name === '_extra') {
          expect(got === null ? {} : JSON.parse(got as string)).toEqual(extra);
          continue;
        }
        const v = row[c.name];
        const want =
          v === null ? null : c.type === 'timestamp' ? isoToMicros(v as string).toString() : c.type === 'integer' ? String(v) : v;
        expect(got, `${table}.${c.name}`).toEqual(want);
      }
    });
  });

  it('keeps microseconds and unicode exactly', async () => {
    const { schema, rows } = fixtureTable('achievements');
    const { path } = await writeParquet('micro', schema, rows);
    const got = await query(
      `SELECT strftime(make_timestamp(epoch_us(action_date)), '%Y-%m-%dT%H:%M:%S.%fZ') AS a, comment FROM read_parquet('${path}') ORDER BY id`,
    );
    expect(got[0].a).toBe('2024-10-26T23:59:59.999999Z');
    expect(got[1].comment).toBe('-1 point for 🙈 behaviour; @staff to follow up');
  });

  it('writes data page V1, snappy, and row groups of rowGroupRows', async () => {
    const { schema, rows } = fixtureTable('achievements');
    const many: Row[] = [];
    for (let i = 0; i < 25; i++) for (const r of rows) many.push({ ...r, id: `A${i}${r.id}` });
    const { path } = await writeParquet('groups', schema, many, { rowGroupRows: 10 });
    const meta = await query(
      `SELECT row_group_id, row_group_num_rows, compression, data_page_offset FROM parquet_metadata('${path}') WHERE column_id = 0 ORDER BY row_group_id`,
    );
    expect(meta.map((m) => Number(m.row_group_num_rows))).toEqual([10, 10, 10, 10, 10]);
    expect(new Set(meta.map((m) => m.compression))).toEqual(new Set(['SNAPPY']));
    // The page header is Thrift compact: field 1 (type, i32) = byte 0x15, then zigzag varint of
    // the PageType: DATA_PAGE (0) -> 0x00; DATA_PAGE_V2 (3) would be 0x06.
    const fh = await open(path);
    try {
      for (const m of meta) {
        const buf = Buffer.alloc(2);
        await fh.read(buf, 0, 2, Number(m.data_page_offset));
        expect([...buf]).toEqual([0x15, 0x00]);
      }
    } finally {
      await fh.close();
    }
    const types = await query(
      `SELECT name, logical_type::VARCHAR AS l, converted_type FROM parquet_schema('${path}') WHERE name IN ('created_at', 'comment')`,
    );
    expect(
      types.map((t) => [t.name, String(t.l).includes('isAdjustedToUTC=1') || String(t.l).startsWith('StringType'), t.converted_type]),
    ).toEqual([
      ['comment', true, 'UTF8'],
      ['created_at', true, 'TIMESTAMP_MICROS'],
    ]);
    const n = await query(`SELECT count(*)::INTEGER AS n, count(DISTINCT id)::INTEGER AS d FROM read_parquet('${path}')`);
    expect(n[0]).toEqual({ n: 50, d: 50 });
  });

  it('drift lands in _extra even when the schema was built without it', async () => {
    const { schema, rows } = fixtureTable('achievements');
    const bare = { ...schema, columns: schema.columns.filter((c) => c.name !== '_extra') };
    const { path } = await writeParquet('bare', bare, rows);
    const got = await query(`SELECT _extra FROM read_parquet('${path}') ORDER BY id`);
    expect(got[0]._extra).toBeNull();
    expect(JSON.parse(got[1]._extra as string)).toEqual({ total_points__raw: 'lots', house: 'Dewi', points_breakdown: '[1,2]' });
  });

  it('an empty table is still a valid file', async () => {
    const { schema } = fixtureTable('school_meta');
    const { path } = await writeParquet('empty', schema, []);
    expect(await query(`SELECT count(*)::INTEGER AS n FROM read_parquet('${path}')`)).toEqual([{ n: 0 }]);
  });

  it('isoToMicros', () => {
    expect(isoToMicros('2024-03-31T00:30:00.000000Z')).toBe(1711845000000000n);
    expect(isoToMicros('1970-01-01T00:00:00.000001Z')).toBe(1n);
    expect(() => isoToMicros('2024-03-31 00:30')).toThrow(/ISO 8601/);
  });
});
