import { describe, expect, it } from 'vitest';
import { SchoolData } from '../../src/sandbox/school-data.ts';

describe('SchoolData', () => {
  it('builds achievement JSON text identical to JSON.stringify of the object, through mutations', () => {
    let t = Date.now() * 1000;
    const d = new SchoolData(1, 1, 'Europe/London', 300, () => ++t);
    const both = new Set(['students', 'employees']);
    const check = () => {
      const ctx = d.achievementCtx();
      for (const i of d.cols.achievements.view({}).keysAfter(-1)) {
        for (const inc of [both, new Set<string>(), new Set(['employees'])]) {
          for (const scope of [{ full: true }, { full: false }]) {
            expect(d.achievementJson(i, inc, scope, ctx)).toBe(JSON.stringify(d.render('achievements', i, inc, scope, ctx)));
          }
        }
      }
    };
    check();
    d.update('achievements', 3, { comment: 'x', students: 'ignored' } as never);
    d.remove('students', d.achievementLinks(5).students[0]);
    d.update('employees', d.achievementLinks(6).employees[0] ?? 0, { surname: 'Changed' });
    d.add('achievements', { students: [1, 2], employees: [] }, { comment: 'new' });
    check();
    expect(d.render('achievements', 3, both, { full: true }).comment).toBe('x');
    expect((d.render('achievements', 3, both, { full: true }).students as { data: unknown[] }).data).not.toBe('ignored');
  });

  it('never gives created_at after updated_at and keeps updated_at growing with the row index', () => {
    const d = new SchoolData(9, 2, 'UTC', 2000, () => 0);
    let prev = -1;
    for (let i = 0; i < 2000; i++) {
      const u = d.updated('achievements', i);
      expect(u).toBeGreaterThan(prev);
      expect(d.created('achievements', i)).toBeLessThanOrEqual(u);
      prev = u;
    }
  });
});

describe('huge schools', () => {
  it('keep every base updated_at in the past, still growing with the row index', () => {
    const d = new SchoolData(1, 1, 'UTC', 50_000_000, () => 0);
    const last = d.updated('achievements', 49_999_999);
    expect(last).toBeLessThan(Date.now() * 1000);
    expect(last).toBeGreaterThan(d.updated('achievements', 49_999_998));
  });
});
