import { isPersonTable, OWN_ID } from '../privacy/name-rules.ts';
import { f, singular } from './fields.ts';
import type { FieldSpec, ResourceSpec } from './types.ts';

/** Deletion record types (spec 4.4) of resources users commonly declare, by table name. */
const KNOWN_DELETION_TYPES: Record<string, string> = {
  students: 'student',
  contacts: 'contact',
  employees: 'employee',
  groups: 'group',
  classes: 'class',
  lessons: 'lesson',
  rooms: 'room',
  subjects: 'subject',
  periods: 'period',
  exclusions: 'exclusion',
  events: 'event',
  behaviours: 'behaviour',
  photos: 'photo',
  employee_absences: 'employee_absence',
  attendance_summaries: 'attendance_summary',
};

export interface GenericResourceDef {
  name: string;
  path: string;
  key?: string[];
  incremental?: boolean;
  include?: string[];
  fields?: FieldSpec[];
  deletionType?: string;
}

/**
 * A resource declared in a pipeline file rather than in code (students, contacts, groups...).
 * Without declared fields only `id` is a column; every other field is flattened generically and
 * kept as drift (NDJSON keys / the `_extra` column), so nothing is lost.
 */
export function genericResource(def: GenericResourceDef): ResourceSpec {
  const key = def.key ?? ['id'];
  const declared = def.fields ?? [];
  // key columns are always columns, even when the declared fields leave them out
  // In a table of people (students, contacts...) the id is a person id (docs/personal-data.md).
  const own = (table: string, k: string) => (isPersonTable(table) && OWN_ID.test(k) ? 'person_id' : undefined);
  const fields = [
    ...key.filter((k) => !declared.some((d) => d.path === k)).map((k) => f(k, 'string', false, own(def.name, k))),
    ...declared,
  ];
  const parent = singular(def.name);
  const incremental = def.incremental ?? true;
  return {
    name: def.name,
    path: def.path,
    scope: 'school',
    shape: 'list',
    paginated: true,
    incremental,
    fields,
    key,
    children: (def.include ?? []).map((inc) => {
      const table = `${parent}_${inc.replace(/\./g, '__')}`;
      return { include: inc, table, parentKey: `${parent}_id`, columns: [f('id', 'string', true, own(table, 'id'))] };
    }),
    deletionType: def.deletionType ?? KNOWN_DELETION_TYPES[def.name],
    updatedAtField: incremental ? 'updated_at' : undefined,
  };
}
