import { describe, expect, it } from 'vitest';
import { SchoolData } from '../../src/sandbox/school-data.ts';
import { microsOfDt, type DateTimeObject } from '../../src/sandbox/time.ts';

const BOTH = new Set(['students', 'employees']);
type Rec = Record<string, unknown>;

function page(seed: number, n: number): Rec[] {
  const d = new SchoolData(seed, 1, 'Europe/London', n, () => 0, 'wide');
  const ctx = d.achievementCtx();
  const out: Rec[] = [];
  for (let i = 0; i < n; i++) out.push(d.render('achievements', i, BOTH, { full: true }, ctx));
  return out;
}

const isDt = (v: unknown): v is DateTimeObject => typeof v === 'object' && v !== null && 'timezone_type' in v;
const people = (rows: Rec[]) => rows.flatMap((r) => [...(r.students as { data: Rec[] }).data, ...(r.employees as { data: Rec[] }).data]);

/** Wall times (as if UTC, seconds) of the daylight-saving changes of London and Sydney in 2023-2024, with the zone. */
const CHANGES: { zone: string; wall: number }[] = [
  { zone: 'Europe/London', wall: Date.UTC(2023, 2, 26, 1) / 1000 },
  { zone: 'Europe/London', wall: Date.UTC(2023, 9, 29, 2) / 1000 },
  { zone: 'Europe/London', wall: Date.UTC(2024, 2, 31, 1) / 1000 },
  { zone: 'Europe/London', wall: Date.UTC(2024, 9, 27, 2) / 1000 },
  { zone: 'Australia/Sydney', wall: Date.UTC(2023, 3, 2, 3) / 1000 },
  { zone: 'Australia/Sydney', wall: Date.UTC(2023, 9, 1, 2) / 1000 },
  { zone: 'Australia/Sydney', wall: Date.UTC(2024, 3, 7, 3) / 1000 },
  { zone: 'Australia/Sydney', wall: Date.UTC(2024, 9, 6, 2) / 1000 },
];
const wallOf = (v: DateTimeObject) => Date.parse(v.date.slice(0, 19).replace(' ', 'T') + 'Z') / 1000;
const nearChange = (v: DateTimeObject) => CHANGES.some((c) => c.zone === v.timezone && Math.abs(wallOf(v) - c.wall) <= 90 * 60);

describe('the wide data shape', () => {
  it('is a pure function of the seed, and its JSON text is JSON.stringify of its objects', () => {
    expect(JSON.stringify(page(3, 200))).toBe(JSON.stringify(page(3, 200)));
    expect(JSON.stringify(page(3, 50))).not.toBe(JSON.stringify(page(4, 50)));
    let t = Date.now() * 1000;
    const d = new SchoolData(1, 1, 'UTC', 300, () => ++t, 'wide');
    d.update('students', d.achievementLinks(5).students[0]!, { surname: 'Changed' });
    const ctx = d.achievementCtx();
    for (let i = 0; i < 300; i++)
      expect(d.achievementJson(i, BOTH, { full: true }, ctx)).toBe(JSON.stringify(d.render('achievements', i, BOTH, { full: true }, ctx)));
  });

  it('embeds about 2.8 people per achievement, each with a dozen undeclared fields and datetimes of its own', () => {
    const rows = page(1, 3000);
    const ps = people(rows);
    expect(ps.length / rows.length).toBeGreaterThan(2.6);
    expect(ps.length / rows.length).toBeLessThan(3.0);
    for (const p of ps.slice(0, 500)) {
      expect(Object.keys(p).length - 1).toBeGreaterThanOrEqual(12); // all but id are undeclared
      expect(isDt(p.created_at) && isDt(p.updated_at)).toBe(true);
    }
  });

  it('spreads datetimes over four zones, a quarter of the free ones within 90 minutes of a DST change, in gaps and folds', () => {
    const rows = page(1, 4000);
    const all = [...rows, ...people(rows)].flatMap((r) => Object.values(r).filter(isDt));
    const zones = new Set(all.map((v) => v.timezone));
    expect([...zones].sort()).toEqual(['Africa/Johannesburg', 'Australia/Sydney', 'Europe/London', 'UTC']);
    const free = rows.map((r) => r.achievement_date).filter(isDt);
    const edge = free.filter(nearChange);
    expect(edge.length / free.length).toBeGreaterThan(0.2);
    expect(edge.length / free.length).toBeLessThan(0.3);
    // a spring-forward gap in London (01:00-02:00 on 2023-03-26) and an autumn fold (01:00-02:00 on 2023-10-29)
    const inGap = all.some((v) => v.timezone === 'Europe/London' && /^2023-03-26 01:/.test(v.date));
    const inFold = all.some((v) => v.timezone === 'Europe/London' && /^2023-10-29 01:/.test(v.date));
    expect(inGap && inFold).toBe(true);
  });

  it('keeps created_at before updated_at for people, and updated_at the true instant', () => {
    let t = 0;
    const d = new SchoolData(1, 1, 'UTC', 10, () => ++t, 'wide');
    for (let i = 0; i < 1000; i++) {
      const s = d.render('students', i, new Set(), { full: true });
      const updated = microsOfDt(s.updated_at as DateTimeObject);
      expect(Math.abs(updated - d.updated('students', i))).toBeLessThanOrEqual(3_600_000_000); // only a fold may read an hour early
      expect(microsOfDt(s.created_at as DateTimeObject)).toBeLessThanOrEqual(updated);
    }
  });

  it('has awkward text, random nulls and numbers sent as strings', () => {
    const rows = page(1, 2000);
    const text = rows.map((r) => r.comment).filter((c): c is string => typeof c === 'string');
    for (const ch of [',', '"', '\r\n', '\n', '\t', '优', '🌟'])
      expect(
        text.some((c) => c.includes(ch)),
        JSON.stringify(ch),
      ).toBe(true);
    expect(new Set(text).size).toBeGreaterThan(300);
    for (const f of ['type', 'action', 'subject', 'class', 'points', 'comment', 'parents_notified', 'achievement_date']) {
      const nulls = rows.filter((r) => r[f] === null).length;
      expect(nulls, f).toBeGreaterThan(0);
      expect(nulls, f).toBeLessThan(rows.length / 2);
    }
    expect(rows.some((r) => typeof r.points === 'string') && rows.some((r) => typeof r.points === 'number')).toBe(true);
    expect(rows.some((r) => typeof r.mis_id === 'number') && rows.some((r) => typeof r.mis_id === 'string')).toBe(true);
    expect(people(rows).some((p) => typeof p.mis_id === 'number')).toBe(true);
  });
});
