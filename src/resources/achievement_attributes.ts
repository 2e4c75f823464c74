import { f, schoolList, TIMESTAMPS } from './fields.ts';
import type { ResourceSpec } from './types.ts';

/** GET /schools/{id}/achievements/attributes (spec 2.8): the MIS's select-box options. */
export const achievementAttributes: ResourceSpec = schoolList(
  'achievement_attributes',
  '/schools/{school_id}/achievements/attributes',
  [
    f('id'),
    f('mis_id', 'string', true),
    f('type', 'string', true),
    f('code', 'string', true),
    f('active', 'boolean', true),
    f('points', 'integer', true),
    f('description', 'string', true),
    f('bullying_type_enabled', 'boolean', true),
    ...TIMESTAMPS,
  ],
  { incremental: false }, // no updated_after on this endpoint: read whole, small
);
