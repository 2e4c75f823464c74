import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatByName } from '../../src/format/index.ts';
import type { FormatOptions } from '../../src/format/index.ts';
import snappy from 'snappyjs';
import { encodeLevels, snappyCompress } from '../../src/format/parquet/file.ts';
import type { Row, TableSchema } from '../../src/table.ts';

let dir: string;
let con: DuckDBConnection;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'parquet-builtin-'));
  con = await (await DuckDBInstance.create(':memory:')).connect();
});
afterAll(async () => {
  con?.closeSync();
  await rm(dir, { recursive: true, force: true });
});

const schema: TableSchema = {
  name: 't',
  key: ['id'],
  columns: [
    { name: 'id', type: 'string', nullable: false },
    { name: 'n', type: 'integer', nullable: true },
    { name: 'x', type: 'double', nullable: true },
    { name: 'b', type: 'boolean', nullable: true },
    { name: 'at', type: 'timestamp', nullable: true },
    { name: '_extra', type: 'json', nullable: true },
  ],
};

async function write(name: string, rows: Row[], opts: FormatOptions = {}): Promise<string> {
  const path = join(dir, `${name}.parquet`);
  const w = formatByName('parquet').open(schema, createWriteStream(path), opts);
  await w.write(rows);
  await w.finish();
  return path;
}
const q = async (sql: string) => (await con.runAndReadAll(sql)).getRowObjectsJson();

/** Decodes the RLE / bit-packed hybrid (bit width 1) as a reader does. */
function decodeLevels(buf: Buffer, n: number): number[] {
  const len = buf.readUInt32LE(0);
  expect(len).toBe(buf.length - 4);
  const out: number[] = [];
  let o = 4;
  const varint = () => {
    let v = 0;
    let mul = 1;
    for (;;) {
      const b = buf[o++]!;
      v += (b & 0x7f) * mul;
      if (b < 0x80) return v;
      mul *= 128;
    }
  };
  while (out.length < n) {
    const h = varint();
    if (h % 2 === 0) for (let i = 0; i < h / 2; i++) out.push(buf[o]!);
    else {
      for (let g = 0; g < (h - 1) / 2; g++) for (let bit = 0; bit < 8; bit++) out.push((buf[o + g]! >> bit) & 1);
      o += (h - 1) / 2;
      continue;
    }
    o++;
  }
  return out.slice(0, n);
}

describe('built-in parquet writer', () => {
  it.each([
    ['all set', Array.from({ length: 100 }, () => 1)],
    ['all null', Array.from({ length: 9 }, () => 0)],
    ['alternating', Array.from({ length: 37 }, (_, i) => i % 2)],
    ['mixed runs', [1, 0, 1, 1, 0, ...Array.from({ length: 20 }, () => 1), 0, 1, 0, ...Array.from({ length: 9 }, () => 0), 1]],
    ['one', [1]],
  ])('definition levels round-trip: %s', (_name, levels) => {
    const defs = Uint8Array.from(levels);
    expect(decodeLevels(encodeLevels(defs, defs.length), defs.length)).toEqual(levels);
  });

  it('compresses into its reused buffer exactly as snappyjs compress() does, whatever that buffer held', () => {
    // largest first: later inputs reuse a buffer still holding an earlier one's bytes
    const sizes = [200_000, 70_000, 65_536, 4_097, 300, 17, 1, 0];
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
    for (const n of sizes) {
      // text-like: runs and repeats (copies) mixed with noise (literals), as page bodies are
      const input = Buffer.alloc(n);
      for (let i = 0; i < n; i++) input[i] = next() % 4 === 0 ? next() % 256 : 97 + ((i >> 3) % 7);
      const mine = snappyCompress(input);
      expect(Buffer.compare(mine, Buffer.from(snappy.compress(input)))).toBe(0);
      expect(mine.buffer.byteLength).toBe(mine.length); // exactly its size: no worst-case buffer behind it
    }
  });

  it('reads back nulls, negative and pre-1970 values, and min/max statistics', async () => {
    const rows: Row[] = [];
    for (let i = 0; i < 50; i++) {
      rows.push({
        id: `r${i}`,
        n: i % 3 === 0 ? null : i - 25,
        x: i % 4 === 0 ? null : i / 8,
        b: i % 5 === 0 ? null : i % 2 === 0,
        at: i % 7 === 0 ? null : `19${String(50 + (i % 40)).padStart(2, '0')}-06-01T12:00:00.00000${i % 10}Z`,
        ...(i % 9 === 0 ? { drift: `é${i}` } : {}),
      });
    }
    const path = await write('values', rows);
    const back = await q(`SELECT id, n, x, b, epoch_us("at")::VARCHAR AS at, _extra FROM read_parquet('${path}')`);
    rows.forEach((r, i) => {
      const at = r.at === null ? null : String(Date.parse((r.at as string).slice(0, 19) + 'Z') * 1000 + (i % 10));
      expect(back[i]).toEqual({
        id: r.id,
        n: r.n === null ? null : String(r.n),
        x: r.x,
        b: r.b,
        at,
        _extra: i % 9 === 0 ? JSON.stringify({ drift: `é${i}` }) : null,
      });
    });
    const stats = await q(
      `SELECT path_in_schema AS c, stats_min_value AS lo, stats_max_value AS hi, stats_null_count::INTEGER AS nulls FROM parquet_metadata('${path}') WHERE path_in_schema IN ('n', 'x')`,
    );
    expect(stats).toEqual([
      { c: 'n', lo: '-24', hi: '24', nulls: 17 },
      { c: 'x', lo: '0.125', hi: '6.125', nulls: 13 },
    ]);
  });

  it('bounds row groups by bytes as well as rows', async () => {
    const rows: Row[] = Array.from({ length: 1000 }, (_, i) => ({ id: 'x'.repeat(1000) + i, n: i, x: null, b: null, at: null }));
    const path = await write('bytes', rows, { rowGroupRows: 100_000, rowGroupBytes: 100_000 });
    const groups = await q(`SELECT row_group_num_rows::INTEGER AS n FROM parquet_metadata('${path}') WHERE column_id = 0`);
    expect(groups.length).toBeGreaterThan(5);
    expect(groups.every((g) => (g.n as number) <= 128)).toBe(true);
    expect(groups.reduce((a, g) => a + (g.n as number), 0)).toBe(1000);
    expect(await q(`SELECT count(DISTINCT id)::INTEGER AS d, sum(n)::INTEGER AS s FROM read_parquet('${path}')`)).toEqual([
      { d: 1000, s: 499500 },
    ]);
  });
});

describe('encoded chunks', () => {
  it('a slice past the end stops at the last row (file rollover asks for the room left)', async () => {
    const { sliceChunk } = await import('../../src/format/chunk.ts');
    const chunk = { kind: 'text' as const, rows: 3, bytes: Buffer.from('a\nbb\nccc\n'), ends: Uint32Array.from([2, 5, 9]) };
    const tail = sliceChunk(chunk, 1, 50);
    expect(tail.rows).toBe(2);
    expect(Buffer.from((tail as typeof chunk).bytes).toString()).toBe('bb\nccc\n');
    expect([...(tail as typeof chunk).ends]).toEqual([3, 7]);
  });
});
