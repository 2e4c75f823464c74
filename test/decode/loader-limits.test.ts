import { describe, expect, it } from 'vitest';
import { parseBufferedPage, valuesOverLimits, type OverLimit } from '../../src/decode/index.ts';

const scope = { table: 'achievements', includes: new Map([['students', 'achievement_students']]), json: new Set(['meta']) };
const limits = { field: 20, row: 60 };

describe('values over a loader limit', () => {
  it('names the table and column of each value over the field limit, and each row over the row limit', () => {
    const records = [
      {
        id: '1',
        comment: 'c'.repeat(21),
        address: { line1: '€'.repeat(7) }, // 21 bytes of UTF-8
        meta: { a: 1, b: 'x'.repeat(10) }, // one JSON column: 24 bytes
        students: { data: [{ id: 's', note: 'n'.repeat(30), more: 'm'.repeat(19), also: 'a'.repeat(19) }] },
      },
      { id: '2', comment: 'short' },
    ];
    const out: OverLimit[] = [];
    valuesOverLimits(records, scope, out, limits);
    expect(out.map((w) => [w.table, w.column, w.bytes])).toEqual([
      ['achievements', 'comment', 21],
      ['achievements', 'address__line1', 21],
      ['achievements', 'meta', 24],
      ['achievement_students', 'note', 30],
      ['achievement_students', undefined, 69],
      ['achievements', undefined, 67],
    ]);
    expect(out[0]!.loader).toBe('Snowflake');
    expect(out[4]!.loader).toBe('BigQuery');
  });

  it('never walks a page the decoder measured under the field limit', () => {
    const page = parseBufferedPage(Buffer.from(JSON.stringify({ data: [{ id: '1', comment: 'c'.repeat(30) }] })));
    const out: OverLimit[] = [];
    valuesOverLimits(page.rows, scope, out, { field: 10_000, row: 60 }); // the row limit alone cannot be reached either
    expect(out).toEqual([]);
    valuesOverLimits(page.rows, scope, out, { field: 20, row: 1000 });
    expect(out.map((w) => w.column)).toEqual(['comment']);
  });
});
