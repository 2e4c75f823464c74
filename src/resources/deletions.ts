import { f } from './fields.ts';
import type { ResourceSpec } from './types.ts';

/**
 * GET /schools/{id}/deletions (spec 2.6), plus two columns of ours:
 *  - detected_by: 'api' for rows read from /deletions, 'snapshot' for rows the pipeline derives
 *    (a row missing from a full snapshot of a table without deletion records);
 *  - table: the exported table the deleted row belongs to, null when no exported table holds it.
 * Key ['type', 'id'].
 */
/** Deletion types (spec 4.4) whose records name a person: their id and mis_id are person ids. */
export const PERSON_DELETION_TYPES: readonly string[] = [
  'student',
  'student_pre_admission',
  'student_leaver',
  'contact',
  'employee',
  'person',
];
const OF_A_PERSON = { column: 'type', in: PERSON_DELETION_TYPES };

export const DELETION_FIELDS = [
  f('type'),
  { ...f('id', 'string', false, 'person_id'), personalWhen: OF_A_PERSON },
  { ...f('mis_id', 'string_or_integer', true, 'person_id'), personalWhen: OF_A_PERSON },
  f('deleted_at', 'datetime', true),
  f('restored_at', 'datetime', true),
  f('detected_by'),
  f('table', 'string', true),
];

/**
 * The deletions resource for a run that exports `resources`: deletion type -> table comes from
 * their `deletionType`, so user-declared resources (students, contacts...) map too. The registry
 * holds the variant for the built-in resources; a pipeline with generic resources calls this.
 */
export function deletionsFor(resources: readonly ResourceSpec[]): ResourceSpec {
  const tables = new Map<string, string>();
  for (const r of resources) if (r.deletionType) tables.set(r.deletionType, r.name);
  return {
    name: 'deletions',
    path: '/schools/{school_id}/deletions',
    scope: 'school',
    shape: 'list',
    paginated: true,
    incremental: true,
    fields: DELETION_FIELDS,
    key: ['type', 'id'],
    updatedAtField: undefined, // records carry deleted_at / restored_at, not updated_at
    prepare: (r) => ({
      ...r,
      detected_by: r.detected_by ?? 'api',
      table: r.table ?? (typeof r.type === 'string' ? (tables.get(r.type) ?? null) : null),
    }),
  };
}
