import { f, schoolList, TIMESTAMPS } from './fields.ts';
import type { ResourceSpec } from './types.ts';

/** GET /schools/{id}/achievements (spec 2.7); includes are requested from `children`. */
export const achievements: ResourceSpec = schoolList(
  'achievements',
  '/schools/{school_id}/achievements',
  [
    f('id'),
    f('mis_id'),
    f('type', 'string', true),
    f('action', 'string', true),
    f('subject', 'string', true),
    f('class', 'string', true),
    f('points', 'integer', true),
    f('total_points', 'integer', true),
    f('comment', 'string', true, 'free_text'),
    f('parents_notified', 'boolean', true),
    f('achievement_date', 'datetime', true),
    f('action_date', 'datetime', true),
    f('recorded_date', 'datetime', true),
    ...TIMESTAMPS,
  ],
  {
    // Fields of included students/employees are not part of the contract (spec 2.13): only the id
    // is declared; everything else is flattened generically and kept as drift, and classified by
    // the name rules of src/privacy/name-rules.ts (these are tables of people).
    children: [
      { include: 'students', table: 'achievement_students', parentKey: 'achievement_id', columns: [f('id', 'string', false, 'person_id')] },
      {
        include: 'employees',
        table: 'achievement_employees',
        parentKey: 'achievement_id',
        columns: [f('id', 'string', false, 'person_id')],
      },
    ],
    deletionType: 'achievement',
  },
);
