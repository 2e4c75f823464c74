import { describe, expect, it } from 'vitest';
import { dataMap } from '../../src/privacy/datamap.ts';
import { genericResource, PERSON_DELETION_TYPES, RESOURCES, tableSchemas } from '../../src/resources/index.ts';
import type { TableSchema } from '../../src/table.ts';

const builtin = (): TableSchema[] => RESOURCES.flatMap((r) => tableSchemas(r));
const personal = (tables: TableSchema[]) =>
  Object.fromEntries(dataMap(tables).map((t) => [t.table, t.personal.map((c) => `${c.column}:${c.class}${c.when ? ' (when)' : ''}`)]));

describe('the data map (resource declarations)', () => {
  it('classifies the columns of every built-in table; the rest of each table holds nothing about a person', () => {
    expect(personal(builtin())).toEqual({
      schools: [],
      school_meta: [],
      school_permissions: [],
      school_acl: ['ids:person_id'],
      achievements: ['comment:free_text'],
      achievement_students: ['id:person_id'],
      achievement_employees: ['id:person_id'],
      achievement_attributes: [],
      assessment_aspects: [],
      assessment_results: ['result:free_text', 'student:person_id'],
      assessment_resultsets: [],
      deletions: ['id:person_id (when)', 'mis_id:person_id (when)'],
    });
  });

  it('makes deletion ids person ids only for the person types of the spec', () => {
    const del = builtin().find((t) => t.name === 'deletions')!;
    for (const c of ['id', 'mis_id']) {
      expect(del.columns.find((x) => x.name === c)!.personalWhen).toEqual({ column: 'type', in: PERSON_DELETION_TYPES });
    }
    expect([...PERSON_DELETION_TYPES].sort()).toEqual([
      'contact',
      'employee',
      'person',
      'student',
      'student_leaver',
      'student_pre_admission',
    ]);
  });

  it('classifies the ids of custom tables of people, and their children’s parent key', () => {
    const students = tableSchemas(genericResource({ name: 'students', path: '/schools/{school_id}/students', include: ['contacts'] }));
    expect(personal(students)).toEqual({ students: ['id:person_id'], student_contacts: ['student_id:person_id', 'id:person_id'] });
    const groups = tableSchemas(genericResource({ name: 'groups', path: '/schools/{school_id}/groups', include: ['students', 'rooms'] }));
    expect(personal(groups)).toEqual({ groups: [], group_students: ['id:person_id'], group_rooms: [] });
  });

  it('a datetime field shares its class with its zone column', () => {
    const spec = genericResource({
      name: 'contacts',
      path: '/schools/{school_id}/contacts',
      fields: [{ path: 'date_of_birth', type: 'datetime', nullable: true, personal: 'direct_identifier' }],
    });
    const cols = tableSchemas(spec)[0]!.columns.filter((c) => c.personal);
    expect(cols.map((c) => `${c.name}:${c.personal}`)).toEqual([
      'id:person_id',
      'date_of_birth:direct_identifier',
      'date_of_birth__timezone:direct_identifier',
    ]);
  });
});
