import { f } from './fields.ts';
import type { ResourceSpec } from './types.ts';

/** GET /meta/schools/{id}: `{ data: {...} }`, one row per school. */
export const schoolMeta: ResourceSpec = {
  name: 'school_meta',
  path: '/meta/schools/{school_id}',
  scope: 'school',
  shape: 'object',
  paginated: false,
  incremental: false,
  fields: [
    f('online', 'boolean', true),
    f('approved', 'boolean', true),
    f('audited', 'boolean', true),
    f('custom_attendance_codes', 'boolean', true),
  ],
  key: [],
};
