import { Writable } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { formatByName, ndjsonSerializer } from '../../src/format/index.ts';
import { ExportError } from '../../src/errors.ts';
import type { Row } from '../../src/table.ts';
import { collector, fixtureTable } from './helpers.ts';

async function writeAll(format: string, resource: string, table: string, opts = {}, batches = 2) {
  const { schema, rows } = fixtureTable(resource, table);
  const c = collector();
  const f = formatByName(format);
  const w = f.open(schema, c.out, opts);
  const half = Math.ceil(rows.length / batches);
  for (let i = 0; i < rows.length; i += half) await w.write(rows.slice(i, i + half));
  await w.finish();
  expect(c.out.writableFinished).toBe(true);
  expect(w.rowsWritten).toBe(rows.length);
  expect(w.bytesWritten).toBe(c.bytes().length);
  return { schema, rows, bytes: c.bytes(), drains: c.drains() };
}

const TABLES: [string, string][] = [
  ['schools', 'schools'],
  ['achievements', 'achievements'],
  ['achievements', 'achievement_students'],
  ['assessment_results', 'assessment_results'],
  ['school_acl', 'school_acl'],
];

describe('ndjson', () => {
  it.each(TABLES)('%s/%s: one object per line, declared columns in order then drift keys', async (res, table) => {
    const { schema, rows, bytes } = await writeAll('ndjson', res, table);
    const lines = bytes.toString('utf8').split('\n');
    expect(lines.pop()).toBe('');
    const parsed = lines.map((l) => JSON.parse(l) as Row);
    expect(parsed).toEqual(rows);
    const declared = schema.columns.map((c) => c.name).filter((n) => n !== '_extra');
    for (const p of parsed) expect(Object.keys(p).slice(0, declared.length)).toEqual(declared);
  });

  it('rows built in another key order are still written in schema order, drift last', () => {
    const { schema, rows } = fixtureTable('achievements');
    const line = ndjsonSerializer(schema);
    const declared = new Set(schema.columns.map((c) => c.name));
    const entries = Object.entries(rows[1]);
    const reversed = Object.fromEntries([
      ...entries.filter(([k]) => declared.has(k)).reverse(),
      ...entries.filter(([k]) => !declared.has(k)),
    ]) as Row;
    expect(Object.keys(reversed)[0]).toBe('_extracted_at');
    expect(line(reversed)).toBe(line(rows[1]));
    expect(Object.keys(JSON.parse(line(reversed))).slice(-3)).toEqual(['total_points__raw', 'house', 'points_breakdown']);
  });

  it('gzip: readable with gunzip, bytesWritten counts compressed bytes, extension ndjson.gz', async () => {
    const plain = await writeAll('ndjson', 'achievements', 'achievements');
    const gz = await writeAll('ndjson', 'achievements', 'achievements', { gzip: true });
    expect(gunzipSync(gz.bytes).toString('utf8')).toBe(plain.bytes.toString('utf8'));
    expect(formatByName('ndjson').extension({ gzip: true })).toBe('ndjson.gz');
    expect(formatByName('ndjson').extension({})).toBe('ndjson');
  });

  it('waits for drain on a slow destination and loses nothing', async () => {
    const { rows, drains, bytes } = await writeAll('ndjson', 'schools', 'schools', {}, 2);
    expect(drains).toBeGreaterThan(0);
    expect(bytes.toString('utf8').trim().split('\n')).toHaveLength(rows.length);
  });
});

describe('csv', () => {
  it.each(TABLES)('%s/%s: csv-parse reads back the NDJSON rows', async (res, table) => {
    const { schema, rows, bytes } = await writeAll('csv', res, table);
    const text = bytes.toString('utf8');
    const records = parse(text, { columns: true, relax_quotes: false }) as Record<string, string>[];
    const header = (parse(text, { to_line: 1 }) as string[][])[0];
    expect(header).toEqual(schema.columns.map((c) => c.name));
    expect(records).toHaveLength(rows.length);
    const declared = new Set(schema.columns.map((c) => c.name));
    rows.forEach((row, i) => {
      const rec = records[i];
      const extra: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(row)) {
        if (!declared.has(k)) extra[k] = v;
        else expect(rec[k], `${table}.${k}`).toBe(v === null ? '' : String(v));
      }
      expect(rec._extra === '' ? {} : JSON.parse(rec._extra)).toEqual(extra);
    });
    expect(text.endsWith('\r\n')).toBe(true);
  });

  it('quotes commas, quotes and CR/LF; empty string is "" and null is empty', async () => {
    const { schema, rows, bytes } = await writeAll('csv', 'achievements', 'achievements');
    const text = bytes.toString('utf8');
    expect(text).toContain('"Helped a classmate, ""really"" well\r\nand tidied up, 100%"');
    expect(schema.columns[0].name).toBe('id');
    const { bytes: p } = await writeAll('csv', 'school_permissions', 'school_permissions');
    const second = p.toString('utf8').split('\r\n')[2];
    expect(second.startsWith('students.read,Read students,"",students,Core,,,true,false,false,')).toBe(true);
    expect(rows).toHaveLength(2);
  });

  it('formula guard: off by default, prefixes text cells only when asked', async () => {
    const off = (await writeAll('csv', 'schools', 'schools')).bytes.toString('utf8');
    expect(off).toContain('"=HYPERLINK(""http://evil.test"",""click"")"');
    const on = (await writeAll('csv', 'schools', 'schools', { csvFormulaGuard: true })).bytes.toString('utf8');
    expect(on).toContain(`"'=HYPERLINK(""http://evil.test"",""click"")"`);
    const results = (await writeAll('csv', 'assessment_results', 'assessment_results', { csvFormulaGuard: true })).bytes.toString('utf8');
    expect(results).toContain(",'=1+1,");
    const ach = (await writeAll('csv', 'achievements', 'achievements', { csvFormulaGuard: true })).bytes.toString('utf8');
    expect(ach).toContain(",'-1 point for 🙈 behaviour; @staff to follow up,");
  });

  it('an empty table still gets its header', async () => {
    const { schema } = fixtureTable('school_meta');
    const c = collector();
    const w = formatByName('csv').open(schema, c.out, {});
    await w.finish();
    expect(c.bytes().toString()).toBe(
      'online,approved,audited,custom_attendance_codes,_school_id,_region,_run_id,_extracted_at,_extra\r\n',
    );
  });
});

describe('registry', () => {
  it('names the allowed values for an unknown format', () => {
    expect(() => formatByName('xlsx')).toThrow(ExportError);
    expect(() => formatByName('xlsx')).toThrow(/ndjson, csv, parquet/);
    expect(formatByName('parquet').extension({})).toBe('parquet');
    expect(formatByName('csv').extension({})).toBe('csv');
  });
});

describe('a failing destination', () => {
  it.each([
    ['ndjson', {}, 1],
    ['ndjson', { gzip: true }, 1],
    ['csv', {}, 1],
    ['parquet', { rowGroupRows: 1 }, 1],
    ['ndjson', {}, 1 << 20],
    ['ndjson', { gzip: true }, 1 << 20],
    ['csv', {}, 1 << 20],
    ['parquet', { rowGroupRows: 1 }, 1 << 20],
  ])('%s %j (buffer %i): write or finish rejects instead of hanging', async (format, opts, highWaterMark) => {
    const { schema, rows } = fixtureTable('schools');
    const out = new Writable({
      highWaterMark,
      write(_c, _e, cb) {
        cb(new Error('disk full'));
      },
    });
    out.on('error', () => {});
    const w = formatByName(format).open(schema, out, opts);
    const attempt = async () => {
      for (let i = 0; i < 50; i++) await w.write(rows);
      await w.finish();
    };
    await expect(attempt()).rejects.toThrow(/disk full/);
  });
});
