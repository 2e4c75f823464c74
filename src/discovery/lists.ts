import { ConfigError } from '../errors.ts';

/**
 * The school lists of spec 4.2 and the filters each one takes. A filter a list does not take is
 * a usage error naming the lists that do, before any request: the service might ignore it and
 * return a longer list than the user thinks they asked for.
 */
export const FILTERS = ['postcode', 'la_code', 'establishment_number', 'urn', 'iso_3166_2', 'updated_after', 'updated_before'] as const;
export type FilterName = (typeof FILTERS)[number];
export type ListFilters = Partial<Record<FilterName, string>>;

const COMMON: FilterName[] = ['updated_after', 'updated_before', 'postcode', 'la_code', 'establishment_number'];

export const SCHOOL_LISTS = {
  approved: { path: '/schools', filters: [...COMMON, 'iso_3166_2'] },
  all: { path: '/schools/all', filters: [...COMMON, 'urn'] },
  pending: { path: '/schools/pending', filters: COMMON },
  audited: { path: '/schools/audited', filters: COMMON },
  offline: { path: '/schools/offline', filters: COMMON },
  revoked: { path: '/schools/revoked', filters: [] },
  declined: { path: '/schools/declined', filters: [] },
} satisfies Record<string, { path: string; filters: FilterName[] }>;
export type SchoolListName = keyof typeof SCHOOL_LISTS;
export const LIST_NAMES = Object.keys(SCHOOL_LISTS) as SchoolListName[];

export function listsTaking(filter: FilterName): SchoolListName[] {
  return LIST_NAMES.filter((l) => (SCHOOL_LISTS[l].filters as FilterName[]).includes(filter));
}

// the spec's examples separate date and time by a space; 'T' and a zone are accepted as well
const DATE_RE = /^\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;
const ISO_3166_RE = /^[A-Za-z]{2}(?:-[A-Za-z0-9]{1,3})?(?:,[A-Za-z]{2}(?:-[A-Za-z0-9]{1,3})?)*$/;

function checkValue(name: FilterName, v: string): string {
  const value = v.trim();
  const bad = (what: string) => new ConfigError(`--${name.replace(/_/g, '-')} ${JSON.stringify(v)}: ${what}`, 'E_USAGE');
  if (value === '') throw bad('must not be empty');
  switch (name) {
    case 'urn':
      if (!/^\d{1,12}$/.test(value)) throw bad('expected an integer unique reference number');
      break;
    case 'updated_after':
    case 'updated_before':
      if (!DATE_RE.test(value) || Number.isNaN(Date.parse(value.replace(' ', 'T'))))
        throw bad('expected a date like "2024-09-01" or "2024-09-01 08:00:00"');
      break;
    case 'iso_3166_2':
      if (!ISO_3166_RE.test(value))
        throw bad('expected ISO 3166-1 alpha-2 or ISO 3166-2 codes, comma-separated, e.g. "GB" or "GB-ENG,GB-WLS"');
      return value.toUpperCase();
    default:
      if (value.length > 100) throw bad('at most 100 characters');
  }
  return value;
}

/** The query for one list: only filters it supports, checked; anything else is refused. */
export function buildListQuery(list: SchoolListName, filters: ListFilters): Record<string, string> {
  const spec = SCHOOL_LISTS[list];
  if (!spec) throw new ConfigError(`unknown school list ${JSON.stringify(list)}: expected one of ${LIST_NAMES.join(', ')}`, 'E_USAGE');
  const query: Record<string, string> = {};
  for (const name of FILTERS) {
    const v = filters[name];
    if (v === undefined) continue;
    if (!(spec.filters as FilterName[]).includes(name)) {
      const takers = listsTaking(name);
      throw new ConfigError(
        `--${name.replace(/_/g, '-')} is not supported by the ${list} list; it is taken by --state ${takers.join(', ')}`,
        'E_USAGE',
      );
    }
    query[name] = checkValue(name, v);
  }
  if (
    query.updated_after &&
    query.updated_before &&
    Date.parse(query.updated_after.replace(' ', 'T')) > Date.parse(query.updated_before.replace(' ', 'T'))
  ) {
    throw new ConfigError(
      `--updated-after ${query.updated_after} is later than --updated-before ${query.updated_before}: nothing could match`,
      'E_USAGE',
    );
  }
  return query;
}
