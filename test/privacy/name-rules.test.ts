import { describe, expect, it } from 'vitest';
import { classifyName, isPersonTable } from '../../src/privacy/name-rules.ts';
import { startSandbox } from '../../src/sandbox/index.ts';

describe('name rules', () => {
  it('recognise tables of people by their last word', () => {
    for (const t of ['achievement_students', 'achievement_employees', 'students', 'contacts', 'student_contacts', 'staff', 'people'])
      expect(isPersonTable(t)).toBe(true);
    for (const t of ['achievements', 'assessment_results', 'school_acl', 'deletions', 'employee_absences', 'classes', 'groups'])
      expect(isPersonTable(t)).toBe(false);
  });

  it('classify every field the sandbox sends for included students and employees', async () => {
    const sb = await startSandbox({ schools: 1, achievementsPerSchool: 20 });
    try {
      const school = 'A1001';
      const students = sb.control.records(school, 'students');
      const employees = sb.control.records(school, 'employees');
      const cls = (table: string, rec: Record<string, unknown>) =>
        Object.fromEntries(Object.keys(rec).map((k) => [k, classifyName(table, k) ?? 'none']));
      expect(cls('achievement_students', students[0]!)).toEqual({
        id: 'person_id',
        mis_id: 'person_id',
        upn: 'direct_identifier',
        forename: 'direct_identifier',
        surname: 'direct_identifier',
        year_group: 'none',
        date_of_birth: 'direct_identifier',
        created_at: 'none',
        updated_at: 'none',
      });
      expect(cls('achievement_employees', employees[0]!)).toEqual({
        id: 'person_id',
        mis_id: 'person_id',
        title: 'direct_identifier',
        forename: 'direct_identifier',
        surname: 'direct_identifier',
        initials: 'direct_identifier',
        created_at: 'none',
        updated_at: 'none',
      });
    } finally {
      await sb.close();
    }
  });

  it('find people referenced from other tables, names and free text anywhere, and are unsure otherwise', () => {
    const c = (t: string, col: string) => classifyName(t, col) ?? 'none';
    expect(c('achievements', 'student_id')).toBe('person_id');
    expect(c('achievements', 'students')).toBe('person_id');
    expect(c('achievements', 'recorded_by')).toBe('person_id');
    expect(c('achievements', 'teacher__surname')).toBe('direct_identifier');
    expect(c('achievements', 'teacher__id')).toBe('person_id');
    expect(c('achievements', 'teacher__pronouns')).toBe('unsure');
    expect(c('achievements', 'contact_email')).toBe('direct_identifier');
    expect(c('achievements', 'staff_notes')).toBe('free_text');
    expect(c('achievements', 'student_count')).toBe('none');
    expect(c('achievements', 'location')).toBe('unsure');
    expect(c('groups', 'name')).toBe('none');
    expect(c('groups', 'room_id')).toBe('none');
    expect(c('students', 'name')).toBe('direct_identifier');
    expect(c('students', 'ethnicity')).toBe('unsure');
    expect(classifyName('school_acl', 'ids__id', { person: true })).toBe('person_id');
    expect(classifyName('school_acl', 'ids__type', { person: true })).toBeUndefined();
  });
});
