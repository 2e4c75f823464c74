import { f } from './fields.ts';
import type { ResourceSpec } from './types.ts';

/** GET /schools: the discovery list; each school's row lands in that school's own partition. */
export const schools: ResourceSpec = {
  name: 'schools',
  path: '/schools',
  scope: 'discovery',
  shape: 'list',
  paginated: true,
  incremental: false, // discovery always reads the whole list: a school missing from it matters
  fields: [
    f('id'),
    f('name', 'string', true),
    f('establishment_number', 'string_or_integer', true),
    f('urn', 'integer', true),
    f('phase_of_education', 'string', true),
    f('la_code', 'string_or_integer', true),
    f('timezone', 'string', true),
    f('mis', 'string', true),
    f('address.address_line_1', 'string', true),
    f('address.address_line_2', 'string', true),
    f('address.address_town', 'string', true),
    f('address.address_postcode', 'string', true),
    f('address.address_country.code', 'string', true),
    f('address.address_country.name', 'string', true),
    f('address.address_country.iso_3166_2', 'string', true),
    f('extended.allows_writeback', 'boolean', true),
    f('extended.has_timetables', 'boolean', true),
    f('extended.has_lesson_attendance', 'boolean', true),
    f('region.code', 'string', true),
    f('region.domain', 'string', true),
    f('region.school_url', 'string', true),
    f('region.identifiers.la_code', 'string_or_integer', true),
    f('region.identifiers.establishment_number', 'string_or_integer', true),
    f('region.identifiers.urn', 'string_or_integer', true),
  ],
  key: ['id'],
};
