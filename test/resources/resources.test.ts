import { describe, expect, it } from 'vitest';
import { genericResource, RESOURCES, resourceByName, tableSchemas } from '../../src/resources/index.ts';
import { EXTRA_COLUMN, META_COLUMNS } from '../../src/table.ts';

const names = (spec: string) => tableSchemas(resourceByName(spec)!).map((t) => t.name);
const cols = (spec: string, table = spec) =>
  tableSchemas(resourceByName(spec)!)
    .find((t) => t.name === table)!
    .columns.map((c) => `${c.name}:${c.type}`);
const META = [...META_COLUMNS, EXTRA_COLUMN].map((c) => `${c.name}:${c.type}`);

describe('resource registry', () => {
  it('holds the contract tables', () => {
    expect(RESOURCES.flatMap((r) => tableSchemas(r).map((t) => t.name))).toEqual([
      'schools',
      'school_meta',
      'school_permissions',
      'school_acl',
      'achievements',
      'achievement_students',
      'achievement_employees',
      'achievement_attributes',
      'assessment_aspects',
      'assessment_results',
      'assessment_resultsets',
      'deletions',
    ]);
    expect(resourceByName('nope')).toBeUndefined();
    expect(names('achievements')).toEqual(['achievements', 'achievement_students', 'achievement_employees']);
  });

  it('every table ends with the metadata columns and _extra, and has unique column names', () => {
    for (const r of RESOURCES) {
      for (const t of tableSchemas(r)) {
        const c = t.columns.map((x) => `${x.name}:${x.type}`);
        expect(c.slice(-META.length)).toEqual(META);
        expect(new Set(t.columns.map((x) => x.name)).size).toBe(t.columns.length);
        for (const k of t.key) expect(t.columns.map((x) => x.name)).toContain(k);
      }
    }
  });

  it('flattens names and types per the contract', () => {
    expect(cols('schools')).toEqual(
      expect.arrayContaining([
        'establishment_number:string',
        'la_code:string',
        'urn:integer',
        'address__address_country__code:string',
        'extended__allows_writeback:boolean',
      ]),
    );
    expect(cols('achievements').slice(0, 12)).toEqual([
      'id:string',
      'mis_id:string',
      'type:string',
      'action:string',
      'subject:string',
      'class:string',
      'points:integer',
      'total_points:integer',
      'comment:string',
      'parents_notified:boolean',
      'achievement_date:timestamp',
      'achievement_date__timezone:string',
    ]);
    expect(cols('achievements', 'achievement_students').slice(0, 2)).toEqual(['achievement_id:string', 'id:string']);
    expect(tableSchemas(resourceByName('achievements')!)[1].key).toEqual(['achievement_id', 'id']);
    expect(cols('school_acl')).toEqual(['mode:string', 'ids:json', 'id_count:integer', ...META]);
    expect(cols('school_meta').slice(0, 4)).toEqual([
      'online:boolean',
      'approved:boolean',
      'audited:boolean',
      'custom_attendance_codes:boolean',
    ]);
    expect(cols('deletions')).toEqual([
      'type:string',
      'id:string',
      'mis_id:string',
      'deleted_at:timestamp',
      'deleted_at__timezone:string',
      'restored_at:timestamp',
      'restored_at__timezone:string',
      'detected_by:string',
      'table:string',
      ...META,
    ]);
    expect(resourceByName('deletions')!.key).toEqual(['type', 'id']);
    expect(cols('assessment_results')).toContain('grade_value:string');
    expect(cols('assessment_aspects')).toEqual(expect.arrayContaining(['min_value:string', 'max_value:string']));
  });

  it('declares what the pipeline needs to plan requests', () => {
    const a = resourceByName('achievements')!;
    expect([a.path, a.incremental, a.deletionType, a.updatedAtField]).toEqual([
      '/schools/{school_id}/achievements',
      true,
      'achievement',
      'updated_at',
    ]);
    expect(resourceByName('schools')!.scope).toBe('discovery');
    expect(resourceByName('school_acl')!.query).toEqual({ with_user_type: 'true' });
    expect(resourceByName('school_meta')!.shape).toBe('object');
    for (const n of ['assessment_aspects', 'assessment_results', 'assessment_resultsets'])
      expect(resourceByName(n)!.deletionType).toBeUndefined();
    for (const r of RESOURCES) expect(r.path.startsWith('/')).toBe(true);
  });

  it('genericResource: key, children named after the singular parent, deletion type guessed', () => {
    const s = genericResource({
      name: 'students',
      path: '/schools/{school_id}/students',
      include: ['contacts', 'contacts.contact_details'],
    });
    expect(s.key).toEqual(['id']);
    expect(s.deletionType).toBe('student');
    expect(tableSchemas(s).map((t) => t.name)).toEqual(['students', 'student_contacts', 'student_contacts__contact_details']);
    expect(s.children![0].parentKey).toBe('student_id');
    const typed = genericResource({
      name: 'rooms',
      path: '/schools/{school_id}/rooms',
      fields: [{ path: 'capacity', type: 'integer', nullable: true }],
    });
    expect(typed.fields.map((f) => `${f.path}:${f.type}`)).toEqual(['id:string', 'capacity:integer']);
    const g = genericResource({ name: 'widgets', path: '/schools/{school_id}/widgets', incremental: false, key: ['code'] });
    expect([g.deletionType, g.updatedAtField, g.fields.map((f) => f.path)]).toEqual([undefined, undefined, ['code']]);
  });
});
