import { describe, expect, it } from 'vitest';
import { compileFlattener } from '../../src/flatten/index.ts';
import { deletionsFor, genericResource, resourceByName } from '../../src/resources/index.ts';
import { CTX } from './fixtures.ts';

const achievements = resourceByName('achievements')!;

describe('compileFlattener', () => {
  it('returns every table of the resource, rows for each, and child rows keyed by the parent id', () => {
    const fl = compileFlattener(achievements);
    expect(fl.tables.map((t) => t.name)).toEqual(['achievements', 'achievement_students', 'achievement_employees']);
    const out = fl.flattenBatch(
      [
        { id: 'A1', mis_id: '1', students: { data: [{ id: 'A7' }, { id: 'A8', upn: 'X' }] }, employees: { data: [] } },
        { id: 'A2', mis_id: '2' },
      ],
      CTX,
    );
    expect(out.get('achievements')!.map((r) => r.id)).toEqual(['A1', 'A2']);
    expect(out.get('achievements')![0]).not.toHaveProperty('students');
    expect(out.get('achievements')![0]).not.toHaveProperty('students__data');
    expect(out.get('achievement_students')).toEqual([
      {
        achievement_id: 'A1',
        id: 'A7',
        _school_id: CTX.schoolId,
        _region: 'uk',
        _run_id: CTX.runId,
        _extracted_at: '2026-11-22T01:15:58.123000Z',
      },
      {
        achievement_id: 'A1',
        id: 'A8',
        _school_id: CTX.schoolId,
        _region: 'uk',
        _run_id: CTX.runId,
        _extracted_at: '2026-11-22T01:15:58.123000Z',
        upn: 'X',
      },
    ]);
    expect(out.get('achievement_employees')).toEqual([]);
    expect([...fl.drift().get('achievement_students')!]).toEqual(['upn']);
  });

  it('missing declared fields are null, and the row keys follow the schema order', () => {
    const fl = compileFlattener(achievements);
    const row = fl.flattenBatch([{ id: 'A1' }], CTX).get('achievements')![0];
    const declared = fl.tables[0].columns.map((c) => c.name).filter((n) => n !== '_extra');
    expect(Object.keys(row)).toEqual(declared);
    expect(row.achievement_date).toBeNull();
    expect(row.achievement_date__timezone).toBeNull();
  });

  it('undeclared nested fields and wrong shapes are kept, never dropped', () => {
    const fl = compileFlattener(resourceByName('schools')!);
    const row = fl
      .flattenBatch([{ id: 'A1', address: { address_town: 'Leeds', geo: { lat: 53.8, lon: -1.5 } }, extended: 'none', tags: [] }], CTX)
      .get('schools')![0];
    expect(row.address__address_town).toBe('Leeds');
    expect(row.address__geo__lat).toBe(53.8);
    expect(row.address__geo__lon).toBe(-1.5);
    expect(row.extended__allows_writeback).toBeNull();
    expect(row.extended__raw).toBe('none');
    expect(row.tags).toBe('[]');
    expect([...fl.drift().get('schools')!].sort()).toEqual(['address__geo__lat', 'address__geo__lon', 'extended__raw', 'tags']);
  });

  it('string-or-integer, decimal text, any_scalar and booleans', () => {
    const schools = compileFlattener(resourceByName('schools')!);
    const s = schools.flattenBatch([{ id: 'A1', establishment_number: 4021, la_code: '0674' }], CTX).get('schools')![0];
    expect(s.establishment_number).toBe('4021');
    expect(s.la_code).toBe('0674');
    const results = compileFlattener(resourceByName('assessment_results')!);
    const r = results
      .flattenBatch(
        [
          { id: 'A1', grade_value: '10.50' },
          { id: 'A2', grade_value: 3 },
        ],
        CTX,
      )
      .get('assessment_results')!;
    expect(r.map((x) => x.grade_value)).toEqual(['10.50', '3']);
    const aspects = compileFlattener(resourceByName('assessment_aspects')!);
    const a = aspects
      .flattenBatch(
        [
          { id: 'A1', min_value: 5, max_value: '5' },
          { id: 'A2', min_value: { x: 1 } },
        ],
        CTX,
      )
      .get('assessment_aspects')!;
    expect([a[0].min_value, a[0].max_value]).toEqual(['5', '"5"']);
    expect(a[1].min_value).toBeNull();
    expect(a[1].min_value__raw).toBe('{"x":1}');
  });

  it('school_acl: ids as JSON text and a derived id_count; null mode kept', () => {
    const fl = compileFlattener(resourceByName('school_acl')!);
    const rows = fl
      .flattenBatch(
        [
          { mode: null, ids: [] },
          { mode: 'blacklist', ids: ['A1', 'A2', 'A3'] },
        ],
        CTX,
      )
      .get('school_acl')!;
    expect(rows.map((r) => [r.mode, r.ids, r.id_count])).toEqual([
      [null, '[]', 0],
      ['blacklist', '["A1","A2","A3"]', 3],
    ]);
  });

  it('deletions: detected_by defaults to api, table follows the exported resources', () => {
    const students = genericResource({ name: 'students', path: '/schools/{school_id}/students' });
    const spec = deletionsFor([achievements, students]);
    const rows = compileFlattener(spec)
      .flattenBatch(
        [
          { type: 'student', id: 'A1', mis_id: '1', deleted_at: null },
          { type: 'room', id: 'A2', mis_id: '2', deleted_at: null },
          { type: 'achievement', id: 'A3', detected_by: 'snapshot', deleted_at: '2026-01-01T00:00:00.000000Z' },
        ],
        CTX,
      )
      .get('deletions')!;
    expect(rows.map((r) => [r.table, r.detected_by, r.deleted_at])).toEqual([
      ['students', 'api', null],
      [null, 'api', null],
      ['achievements', 'snapshot', '2026-01-01T00:00:00.000000Z'],
    ]);
  });

  it('generic resources flatten everything and give includes their own tables', () => {
    const spec = genericResource({ name: 'classes', path: '/schools/{school_id}/classes', include: ['students'] });
    const fl = compileFlattener(spec);
    expect(fl.tables.map((t) => t.name)).toEqual(['classes', 'class_students']);
    const out = fl.flattenBatch(
      [
        {
          id: 'A1',
          name: '7A',
          created_at: { date: '2024-01-01 00:00:00.000000', timezone_type: 3, timezone: 'UTC' },
          students: { data: [{ id: 'A9' }] },
        },
      ],
      CTX,
    );
    expect(out.get('classes')![0]).toMatchObject({
      id: 'A1',
      name: '7A',
      created_at: '2024-01-01T00:00:00.000000Z',
      created_at__timezone: 'UTC',
    });
    expect(out.get('class_students')![0]).toMatchObject({ class_id: 'A1', id: 'A9' });
  });

  it('refuses a record that is not an object, naming the table', () => {
    expect(() => compileFlattener(achievements).flattenBatch([null], CTX)).toThrow(/achievements record is not a JSON object/);
  });
});
