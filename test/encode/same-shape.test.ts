import { describe, expect, it } from 'vitest';
import { sameAsFor, sameJson } from '../../src/encode/same-shape.ts';

const dt = (date: string, timezone = 'UTC') => ({ date, timezone_type: 3, timezone });
const base = () => ({ id: 'S1', mis_id: 5001, forename: 'Zoë', upn: null, tags: ['a', 1], created_at: dt('2024-01-01 00:00:00.000000') });

describe('comparators compiled per shape', () => {
  it('agree with the generic deep equality, key order included', () => {
    const a = base();
    const variants: unknown[] = [
      base(),
      { ...base(), forename: 'Zoe' },
      { ...base(), mis_id: '5001' },
      { ...base(), upn: 'K1' },
      { ...base(), tags: ['a', 1, 2] },
      { ...base(), tags: ['a', '1'] },
      { ...base(), created_at: dt('2024-01-01 00:00:00.000001') },
      { ...base(), created_at: { ...dt('2024-01-01 00:00:00.000000'), extra: 1 } },
      { ...base(), created_at: null },
      { ...base(), created_at: 'text' },
      { ...base(), forename: { nested: true } },
      { ...base(), more: 1 },
      Object.fromEntries(Object.entries(base()).reverse()),
      (({ upn: _u, ...rest }) => rest)(base()),
      { ...base(), id: undefined },
      null,
      'S1',
      [base()],
    ];
    const same = sameAsFor(a);
    for (const b of variants) expect(same(a, b), JSON.stringify(b)).toBe(sameJson(a, b));
    expect(same(a, variants[0])).toBe(true);
    expect(sameAsFor(base())).toBe(same); // one compiled function per shape
    const other = sameAsFor({ ...base(), created_at: null });
    expect(other).not.toBe(same);
    expect(other({ ...base(), created_at: null }, { ...base(), created_at: null })).toBe(true);
    expect(other({ ...base(), created_at: null }, base())).toBe(false);
  });

  it('fall back to the generic walk for shapes it does not compile', () => {
    expect(sameAsFor([1])).toBe(sameJson);
    expect(sameAsFor(JSON.parse('{"__proto__": 1}'))).toBe(sameJson);
  });
});
