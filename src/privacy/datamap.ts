/**
 * The data map: what each table's columns hold about a person, from the declarations in
 * src/resources (and, for examples of undeclared fields, the name rules).
 */
import type { PersonalClass, TableSchema } from '../table.ts';
import { classifyColumn } from './classify.ts';
import { isPersonTable, type NameClass } from './name-rules.ts';

export interface DataMapColumn {
  column: string;
  class: PersonalClass;
  when?: { column: string; in: readonly string[] };
}

export interface DataMapTable {
  table: string;
  /** A table of people: every undeclared field describes a person. */
  people: boolean;
  personal: DataMapColumn[];
}

export function dataMap(tables: readonly TableSchema[]): DataMapTable[] {
  return tables.map((t) => ({
    table: t.name,
    people: isPersonTable(t.name),
    personal: t.columns.flatMap((c) =>
      c.personal ? [{ column: c.name, class: c.personal, ...(c.personalWhen ? { when: c.personalWhen } : {}) }] : [],
    ),
  }));
}

/** Fields the service sends for included students and employees (not in its contract), and a few others, as examples. */
export const EXAMPLE_FIELDS: readonly { table: string; column: string }[] = [
  ...['id', 'mis_id', 'upn', 'forename', 'surname', 'legal_surname', 'preferred_name', 'date_of_birth', 'date_of_birth__timezone'].map(
    (column) => ({ table: 'achievement_students', column }),
  ),
  ...['year_group', 'gender', 'email_address', 'created_at', 'notes'].map((column) => ({ table: 'achievement_students', column })),
  ...['title', 'initials', 'mobile_number'].map((column) => ({ table: 'achievement_employees', column })),
  ...['recorded_by', 'student_ids', 'witnesses', 'house', 'location__description'].map((column) => ({ table: 'achievements', column })),
  ...['name', 'group_lead__surname', 'size'].map((column) => ({ table: 'groups', column })),
];

/** The examples classified as a run would (declared columns by their declaration, companions by their column). */
export function exampleClasses(
  tables: readonly TableSchema[],
): { table: string; column: string; class: NameClass | undefined; how: string }[] {
  return EXAMPLE_FIELDS.map((e) => {
    const schema = tables.find((t) => t.name === e.table) ?? { name: e.table, columns: [], key: [] };
    const c = classifyColumn(schema, e.column);
    return { ...e, class: c.cls, how: c.how };
  });
}
