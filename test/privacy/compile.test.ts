import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.ts';
import { compileFlattener } from '../../src/flatten/index.ts';
import { compilePolicy } from '../../src/privacy/compile.ts';
import { KEEP_ALL, type PersonalDataPolicy } from '../../src/privacy/policy.ts';
import { createPseudonymiser, PseudonymiseKey, PSEUDONYM_RE } from '../../src/privacy/pseudonym.ts';
import { genericResource, RESOURCES, resourceByName, tableSchemas } from '../../src/resources/index.ts';
import type { Row, TableSchema } from '../../src/table.ts';

const pseudo = createPseudonymiser(new PseudonymiseKey(Buffer.alloc(32, 1)));
const STRICT: PersonalDataPolicy = { person_id: 'pseudonymise', direct_identifier: 'drop', free_text: 'drop', columns: {} };
const schema = (resource: string, table = resource): TableSchema => tableSchemas(resourceByName(resource)!).find((t) => t.name === table)!;
const ctx = { schoolId: 'A1', region: 'uk', runId: 'r', extractedAt: '2024-01-01T00:00:00Z' };
const dt = (date: string) => ({ date: `${date} 00:00:00.000000`, timezone_type: 3, timezone: 'UTC' });

const student = {
  id: 'A1000130000000054',
  mis_id: '5054',
  upn: 'K820000000378',
  forename: 'Thandiwe',
  surname: '王',
  year_group: '10',
  gender: 'F',
  date_of_birth: dt('2011-06-10'),
  created_at: dt('2023-09-04'),
};
const achievement = {
  id: 'A1000110000000000',
  mis_id: '100000',
  comment: 'Great work, Thandiwe',
  points: 2,
  students: { data: [student] },
  employees: { data: [{ id: 'A1000140000000003', mis_id: 9003, title: 'Dr', forename: 'Mia', surname: 'Ng', initials: 'MN' }] },
};

/** Flatten like the pipeline, then apply the table's compiled policy. */
function run(policy: PersonalDataPolicy, resource: string, records: unknown[]): Map<string, Row[]> {
  const out = compileFlattener(resourceByName(resource)!).flattenBatch(records, ctx);
  for (const [table, rows] of out) compilePolicy(schema(resource, table), policy, pseudo)?.(rows);
  return out;
}

describe('compilePolicy', () => {
  it('is undefined for every table when the policy keeps everything (the default costs nothing)', () => {
    for (const t of RESOURCES.flatMap((r) => tableSchemas(r))) expect(compilePolicy(t, KEEP_ALL, pseudo)).toBeUndefined();
    expect(compilePolicy(schema('achievements'), { ...KEEP_ALL, columns: { 'achievements.comment': 'keep' } })).toBeUndefined();
  });

  it('pseudonymises person ids, drops direct identifiers and free text, keeps the rest (included people and drift alike)', () => {
    const out = run(STRICT, 'achievements', [achievement]);
    const [a] = out.get('achievements')!;
    expect(a).toMatchObject({ id: 'A1000110000000000', mis_id: '100000', comment: null, points: 2 });
    const [s] = out.get('achievement_students')!;
    expect(s).toEqual({
      achievement_id: 'A1000110000000000',
      id: pseudo('A1000130000000054'),
      _school_id: 'A1',
      _region: 'uk',
      _run_id: 'r',
      _extracted_at: '2024-01-01T00:00:00.000000Z',
      mis_id: pseudo('5054'),
      year_group: '10',
      created_at: '2023-09-04T00:00:00.000000Z',
      created_at__timezone: 'UTC',
    });
    // gender: no rule names it, so it is "unsure" and gets the strictest action (drop)
    expect(s).not.toHaveProperty('gender');
    const [e] = out.get('achievement_employees')!;
    expect(Object.keys(e!).filter((k) => !k.startsWith('_'))).toEqual(['achievement_id', 'id', 'mis_id']);
    expect(e!.mis_id).toBe(pseudo('9003')); // a number is pseudonymised as its decimal text
  });

  it('gives the same pseudonym for the same id in every table, so joins keep working', () => {
    const s = run(STRICT, 'achievements', [achievement]).get('achievement_students')![0]!;
    const r = run(STRICT, 'assessment_results', [{ id: 'A7', student: 'A1000130000000054', result: 'Needs support at home' }]).get(
      'assessment_results',
    )![0]!;
    expect(r.student).toBe(s.id);
    expect(r.student).toMatch(PSEUDONYM_RE);
    expect(r.id).toBe('A7');
    expect(r.result).toBeNull();
  });

  it('pseudonymises deletion ids (and mis_ids) of person types only', () => {
    const rows = run(STRICT, 'deletions', [
      { type: 'student', id: 'A31', mis_id: 'M1', deleted_at: dt('2024-02-01') },
      { type: 'student_leaver', id: 'A32', mis_id: 7, deleted_at: dt('2024-02-01') },
      { type: 'contact', id: 'A33', mis_id: 'M3', deleted_at: dt('2024-02-01') },
      { type: 'achievement', id: 'A11', mis_id: 'M4', deleted_at: dt('2024-02-01') },
      { type: 'class', id: 'A12', mis_id: 'M5', deleted_at: dt('2024-02-01') },
    ]).get('deletions')!;
    expect(rows.map((r) => [r.type, r.id, r.mis_id])).toEqual([
      ['student', pseudo('A31'), pseudo('M1')],
      ['student_leaver', pseudo('A32'), pseudo('7')],
      ['contact', pseudo('A33'), pseudo('M3')],
      ['achievement', 'A11', 'M4'],
      ['class', 'A12', 'M5'],
    ]);
  });

  it("pseudonymises the ACL's person ids inside its JSON, in both forms, and keeps the user types", () => {
    const acl = (ids: unknown) => run(STRICT, 'school_acl', [{ mode: 'whitelist', ids }]).get('school_acl')![0]!;
    expect(JSON.parse(acl(['A1', 'A2']).ids as string)).toEqual([pseudo('A1'), pseudo('A2')]);
    const typed = acl([
      { id: 'A1', type: 'student' },
      { id: 'A9', type: 'contact' },
    ]);
    expect(JSON.parse(typed.ids as string)).toEqual([
      { id: pseudo('A1'), type: 'student' },
      { id: pseudo('A9'), type: 'contact' },
    ]);
    expect(typed.id_count).toBe(2);
  });

  it('pseudonymises direct identifiers when asked, and drops a pseudonymised datetime zone', () => {
    const s = run({ ...STRICT, direct_identifier: 'pseudonymise', free_text: 'keep' }, 'achievements', [achievement]).get(
      'achievement_students',
    )![0]!;
    expect(s.forename).toBe(pseudo('Thandiwe'));
    expect(s.upn).toBe(pseudo('K820000000378'));
    expect(s.date_of_birth).toBe(pseudo('2011-06-10T00:00:00.000000Z'));
    expect(s).not.toHaveProperty('date_of_birth__timezone');
    expect(s.gender).toBe(pseudo('F')); // unsure: the strictest action of the policy is pseudonymise
  });

  it('keeps everything personal but the overridden columns; an override reaches a column companion', () => {
    const policy: PersonalDataPolicy = { ...KEEP_ALL, columns: { 'achievements.comment': 'drop', 'achievement_students.upn': 'drop' } };
    const out = run(policy, 'achievements', [{ ...achievement, comment: { not: 'a string' } }]);
    const a = out.get('achievements')![0]!;
    expect(a.comment).toBeNull();
    expect(a).not.toHaveProperty('comment__raw'); // the raw value of a mistyped comment follows the override
    const s = out.get('achievement_students')![0]!;
    expect(s).not.toHaveProperty('upn');
    expect(s).toMatchObject({ id: 'A1000130000000054', forename: 'Thandiwe', gender: 'F' });
  });

  it('an explicit keep wins over the class', () => {
    const out = run({ ...STRICT, columns: { 'achievements.comment': 'keep', 'achievement_students.forename': 'keep' } }, 'achievements', [
      achievement,
    ]);
    expect(out.get('achievements')![0]!.comment).toBe('Great work, Thandiwe');
    expect(out.get('achievement_students')![0]!.forename).toBe('Thandiwe');
  });

  it('refuses to pseudonymise a typed column, and to pseudonymise without a key', () => {
    expect(() =>
      compilePolicy(schema('achievements'), { ...KEEP_ALL, columns: { 'achievements.points': 'pseudonymise' } }, pseudo),
    ).toThrow(ConfigError);
    const t = compilePolicy(schema('assessment_results'), STRICT)!;
    expect(() => t([{ student: 'A1' }])).toThrow(/needs a key/);
  });

  it('transforms people inside drift JSON and inside an `_extra` column filled upstream', () => {
    const groups = genericResource({ name: 'groups', path: '/schools/{school_id}/groups' });
    const [g] = tableSchemas(groups);
    const rows: Row[] = [
      {
        id: 'G1',
        name: 'Nurture group',
        description: 'for children whose parents …',
        students: JSON.stringify([{ id: 'A1', forename: 'Zoë', year_group: '7' }, 'A2']),
        lead_teacher_id: 'A5',
        _extra: JSON.stringify({ recorded_by: 'A6', notes: 'private', house: 'red', size: 12 }),
      },
    ];
    compilePolicy(g!, STRICT, pseudo)!(rows);
    expect(rows[0]).toEqual({
      id: 'G1',
      name: 'Nurture group',
      students: JSON.stringify([{ id: pseudo('A1'), year_group: '7' }, pseudo('A2')]),
      lead_teacher_id: pseudo('A5'),
      _extra: JSON.stringify({ recorded_by: pseudo('A6'), house: 'red' }),
    });
  });

  it('classifies a table of people from a pipeline file: its id and the children’s parent key are person ids', () => {
    const students = genericResource({ name: 'students', path: '/schools/{school_id}/students', include: ['contacts'] });
    const [s, c] = tableSchemas(students);
    const row: Row = { id: 'A1', forename: 'Zoë', year_group: '7' };
    compilePolicy(s!, STRICT, pseudo)!([row]);
    expect(row).toEqual({ id: pseudo('A1'), year_group: '7' });
    const contact: Row = { student_id: 'A1', id: 'A9', email: 'x@example.org', relationship: 'Mother' };
    compilePolicy(c!, STRICT, pseudo)!([contact]);
    expect(contact).toEqual({ student_id: pseudo('A1'), id: pseudo('A9') });
  });
});
