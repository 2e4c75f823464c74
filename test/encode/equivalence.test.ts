import { describe, expect, it } from 'vitest';
import { canEncode, compileResource } from '../../src/encode/page-encoder.ts';
import { chunkBuffers, type EncodedChunk } from '../../src/format/chunk.ts';
import { resourceByName } from '../../src/resources/index.ts';
import { CTX, FIXTURES } from '../flatten/fixtures.ts';
import { viaEncoder, viaRows } from './helpers.ts';
import { SchoolData } from '../../src/sandbox/school-data.ts';
import type { DataShape } from '../../src/sandbox/index.ts';

const FORMATS = ['ndjson', 'csv', 'parquet'] as const;
const dt = (date: string, timezone: string) => ({ date, timezone_type: 3, timezone });

/** Achievements sharing students and employees, as the service embeds them (memo hits and misses). */
function achievementsPages(): unknown[][] {
  const student = (i: number, extra: Record<string, unknown> = {}) => ({
    id: `A10001300000000${i}`,
    mis_id: String(5000 + i),
    forename: i % 2 ? 'Zoë "Z"' : 'Rhys, Jr',
    surname: '王',
    date_of_birth: dt('2011-06-10 00:00:00.000000', 'UTC'),
    updated_at: dt('2023-09-04 15:32:29.983390', 'Europe/London'),
    ...extra,
  });
  const employee = (i: number) => ({
    id: `A10001400000000${i}`,
    title: 'Ms',
    created_at: dt('2023-03-26 01:30:00.000000', 'Europe/London'),
  });
  const base = FIXTURES.achievements![0] as Record<string, unknown>;
  const pages: unknown[][] = [];
  for (let p = 0; p < 3; p++) {
    const page: unknown[] = [];
    for (let i = 0; i < 40; i++) {
      const n = p * 40 + i;
      const students: unknown[] = [student(n % 7), student((n + 3) % 7)];
      // the same id and updated_at with different content: the memo must notice
      if (n % 13 === 0) students.push(student(n % 7, { forename: 'changed' }));
      // the same content with keys in another order: drift order differs, so the output must too
      if (n % 17 === 0) students.push(Object.fromEntries(Object.entries(student(2)).reverse()));
      page.push({
        ...base,
        id: `A1000110000${String(n).padStart(6, '0')}`,
        points: n % 5,
        students: { data: students },
        employees: { data: [employee(n % 3)] },
      });
    }
    // records the generated code refuses: drift, a mismatched type, an unusual datetime, a bare-id include
    page.push({ ...base, id: 'A1', house: 'Dewi', students: { data: [student(1)] } });
    page.push({ ...base, id: 'A2', points: 'lots' });
    page.push({ ...base, id: 'A3', action_date: dt('2024-03-31 01:30', 'Europe/London') });
    page.push({ ...base, id: 'A4', students: { data: ['A100013'] } });
    pages.push(page);
  }
  return pages;
}

/** Pages of a sandbox school in a data shape, as the exporter parses them (JSON text of the list page). */
function sandboxPages(shape: DataShape, rows: number, perPage: number): unknown[][] {
  const d = new SchoolData(7, 2, 'Australia/Sydney', rows, () => 0, shape);
  const ctx = d.achievementCtx();
  const inc = new Set(['students', 'employees']);
  const pages: unknown[][] = [];
  for (let from = 0; from < rows; from += perPage) {
    const items: string[] = [];
    for (let i = from; i < Math.min(rows, from + perPage); i++) items.push(d.achievementJson(i, inc, { full: true }, ctx));
    pages.push(JSON.parse(`[${items.join(',')}]`) as unknown[]);
  }
  return pages;
}

describe('generated serialisers write what the reference path writes, byte for byte', () => {
  const cases = Object.keys(FIXTURES).filter((r) => canEncode(resourceByName(r)!, 'ndjson', {}));
  it('covers the fixture resources that take the fast path', () => {
    expect(cases).toEqual(expect.arrayContaining(['schools', 'achievements', 'assessment_results']));
  });

  for (const format of FORMATS) {
    it.each(cases)(`${format}: fixtures of %s`, async (resource) => {
      const spec = resourceByName(resource)!;
      const pages = [FIXTURES[resource]!, FIXTURES[resource]!];
      const a = await viaRows(spec, format, {}, CTX, pages);
      const b = await viaEncoder(spec, format, {}, CTX, pages);
      expect(b.drift).toEqual(a.drift);
      for (const t of Object.keys(a.files)) expect(b.files[t]!.equals(a.files[t]!), t).toBe(true);
    });

    it(`${format}: achievements with shared, changed and reordered embedded people`, async () => {
      const spec = resourceByName('achievements')!;
      const opts = format === 'csv' ? { csvFormulaGuard: true } : format === 'parquet' ? { rowGroupRows: 100 } : {};
      const a = await viaRows(spec, format, opts, CTX, achievementsPages());
      const b = await viaEncoder(spec, format, opts, CTX, achievementsPages());
      expect(b.drift).toEqual(a.drift);
      expect(Object.keys(b.files)).toEqual(['achievements', 'achievement_students', 'achievement_employees']);
      for (const t of Object.keys(a.files)) expect(b.files[t]!.equals(a.files[t]!), t).toBe(true);
    });
  }

  it.each(FORMATS)('%s: undeclared fields by generated code, learned per layout, byte for byte', async (format) => {
    const spec = resourceByName('achievements')!;
    const base = FIXTURES.achievements![0] as Record<string, unknown>;
    const pages: unknown[][] = [];
    for (let p = 0; p < 3; p++) {
      const page: unknown[] = [];
      for (let i = 0; i < 30; i++) {
        const n = p * 30 + i;
        const rec: Record<string, unknown> = { ...base, id: `A${n}`, house: n % 4 ? `House ${n % 3}` : null, legacy_points: n % 5 };
        if (n % 7 === 0) rec.tags = ['a', n];
        if (n % 6 === 0) rec.synced_at = dt('2024-10-27 01:30:00.000000', 'Europe/London'); // a fold
        if (n % 9 === 0) rec.synced_at = null;
        if (n % 11 === 0) rec.extra_obj = { a: 1, b: { c: 'x' } }; // nested: the reference path
        if (n % 13 === 0) rec['2024'] = 'numeric key'; // ordered first by JavaScript: the reference path
        if (n % 17 === 0) rec.synced_at = dt('2024-01-01', 'UTC'); // not the API's layout: the reference path
        if (n === 40) rec.late_field = 'arrives on page 2';
        page.push(n % 10 === 3 ? Object.fromEntries(Object.entries(rec).reverse()) : rec);
      }
      pages.push(page);
    }
    const opts = format === 'csv' ? { csvFormulaGuard: true } : format === 'parquet' ? { rowGroupRows: 25 } : {};
    const a = await viaRows(spec, format, opts, CTX, pages);
    const b = await viaEncoder(spec, format, opts, CTX, pages);
    expect(b.drift).toEqual(a.drift);
    expect(b.drift.achievements).toEqual(
      expect.arrayContaining(['house', 'legacy_points', 'tags', 'synced_at', 'synced_at__timezone', 'late_field']),
    );
    for (const t of Object.keys(a.files)) expect(b.files[t]!.equals(a.files[t]!), t).toBe(true);
  });

  for (const shape of ['standard', 'wide'] as const) {
    it.each(FORMATS)(`the sandbox's %s achievements in the ${shape} shape`, async (format) => {
      const spec = resourceByName('achievements')!;
      const pages = sandboxPages(shape, 1500, 500);
      const opts = format === 'parquet' ? { rowGroupRows: 700 } : {};
      const a = await viaRows(spec, format, opts, CTX, pages);
      const b = await viaEncoder(spec, format, opts, CTX, pages);
      expect(b.drift).toEqual(a.drift);
      for (const t of Object.keys(a.files)) expect(b.files[t]!.equals(a.files[t]!), t).toBe(true);
    });

    // row groups cut by bytes inside pages, so the writer keeps pages' columns and parts of them between row groups
    it(`parquet: the sandbox's ${shape} achievements in row groups bounded by bytes`, async () => {
      const spec = resourceByName('achievements')!;
      const pages = sandboxPages(shape, 1500, 500);
      const opts = { rowGroupBytes: 20_000 };
      const a = await viaRows(spec, 'parquet', opts, CTX, pages);
      const b = await viaEncoder(spec, 'parquet', opts, CTX, pages);
      for (const t of Object.keys(a.files)) expect(b.files[t]!.equals(a.files[t]!), t).toBe(true);
    });
  }
});

describe('encoded pages own their bytes', () => {
  // pages are encoded in buffers this thread shares between tasks, then copied out
  const views = (c: EncodedChunk) => (c.kind === 'text' ? [c.bytes, c.ends] : c.columns.flatMap((x) => [x.defs, x.data]));
  it.each(FORMATS)('%s: a page waiting to be written is intact after later pages of its task and others are encoded', (format) => {
    const spec = resourceByName('achievements')!;
    const compiled = compileResource(spec, format, {});
    const [a, b] = [compiled.forTask(CTX), compiled.forTask({ ...CTX, schoolId: 'other' })];
    const [p1, p2, p3] = sandboxPages('wide', 300, 100);
    const held = a.encode(p1!).tables;
    const copies = held.map(({ chunk }) => views(chunk).map((v) => Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('hex')));
    b.encode(p2!);
    a.encode(p3!);
    b.encode(p3!);
    expect(held.map(({ chunk }) => views(chunk).map((v) => Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('hex')))).toEqual(
      copies,
    );
    // each view exactly fills its own buffer: nothing beyond the rows is held while the page waits
    for (const { chunk } of held) {
      const bytes = views(chunk).reduce((n, v) => n + v.byteLength, 0);
      expect(chunkBuffers(chunk).reduce((n, x) => n + x.byteLength, 0)).toBe(bytes);
    }
  });
});
