import { f } from './fields.ts';
import type { ResourceSpec } from './types.ts';

/**
 * GET /meta/schools/{id}/acl?with_user_type=true: one row per school. `ids` (strings or
 * {id, type} objects: person ids, spec 2.5) is kept whole as JSON text; id_count is derived so a load can check it cheaply.
 */
export const schoolAcl: ResourceSpec = {
  name: 'school_acl',
  path: '/meta/schools/{school_id}/acl',
  scope: 'school',
  shape: 'object',
  paginated: false,
  incremental: false,
  query: { with_user_type: 'true' },
  fields: [f('mode', 'string', true), f('ids', 'json', true, 'person_id'), f('id_count', 'integer', true)],
  key: [],
  prepare: (r) => ({ ...r, id_count: Array.isArray(r.ids) ? r.ids.length : null }),
};
