import { f } from './fields.ts';
import type { ResourceSpec } from './types.ts';

/** GET /meta/schools/{id}/permissions: the applied permissions, keyed by identity. */
export const schoolPermissions: ResourceSpec = {
  name: 'school_permissions',
  path: '/meta/schools/{school_id}/permissions',
  scope: 'school',
  shape: 'list',
  paginated: false,
  incremental: false,
  fields: [
    f('identity'),
    f('name', 'string', true),
    f('description', 'string', true),
    f('parent', 'string', true),
    f('group', 'string', true),
    f('active_from', 'datetime', true),
    f('optional', 'boolean', true),
    f('approved', 'boolean', true),
    f('audited', 'boolean', true),
  ],
  key: ['identity'],
};
