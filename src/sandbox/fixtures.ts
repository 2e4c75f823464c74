/**
 * The fixed cast: regions, schools and their awkward-but-real attribute values. Approved schools
 * A1001..A10nn carry data; a few more (A9001..) sit in other access states so that every
 * discovery list has something in it.
 */
export type AccessState = 'pending' | 'approved' | 'audited' | 'offline' | 'revoked' | 'declined';
export const ACCESS_STATES: readonly AccessState[] = ['pending', 'approved', 'audited', 'offline', 'revoked', 'declined'];

export interface RegionDef {
  code: string;
  domain: string;
  zone: string;
  country: { code: string; name: string; iso_3166_2?: string };
}

export const REGIONS: readonly RegionDef[] = [
  { code: 'uk', domain: 'api.sandbox.test', zone: 'Europe/London', country: { code: 'GBR', name: 'United Kingdom', iso_3166_2: 'GB-ENG' } },
  {
    code: 'apac',
    domain: 'api-apac.sandbox.test',
    zone: 'Australia/Sydney',
    country: { code: 'AUS', name: 'Australia', iso_3166_2: 'AU-NSW' },
  },
  {
    code: 'africa',
    domain: 'api-africa.sandbox.test',
    zone: 'Africa/Johannesburg',
    country: { code: 'ZAF', name: 'South Africa', iso_3166_2: 'ZA-GP' },
  },
];

export const ALPHA2: Record<string, string> = { GBR: 'GB', AUS: 'AU', ZAF: 'ZA' };

export interface SchoolDef {
  ord: number; // 1-based position: part of every record id of the school
  id: string;
  name: string;
  region: RegionDef;
  state: AccessState;
  /** Zone shown in the school's datetimes; `timezone` in the School object may still be null. */
  zone: string;
  showTimezone: boolean;
  mis: string | null;
  establishmentNumber: string | number;
  laCode: string | number;
  urn: number;
  phase: string;
  address: Record<string, unknown>;
  extended: { allows_writeback: boolean; has_timetables: boolean; has_lesson_attendance: boolean };
}

const NAMES = [
  'St Mary\'s C of E Primary, "Upper" Site',
  'École Saint-Exupéry',
  'Sydney 悉尼 Grammar',
  'Zwelethu 🌍 Academy',
  '=HYPERLINK Academy',
  'Ngā Tamariki Kura',
  'Ørsted Community School',
  'Sandbox Primary\nAnnex',
];
const TOWNS = ['Leeds', 'Sydney', 'Johannesburg', 'Manchester', 'Brisbane', 'Cape Town'];
const MIS = ['SIMS', 'Arbor', 'Bromcom', 'iSAMS'];

const EXTRA_STATES: { state: AccessState; region: number }[] = [
  { state: 'pending', region: 0 },
  { state: 'pending', region: 1 },
  { state: 'revoked', region: 0 },
  { state: 'declined', region: 2 },
  { state: 'offline', region: 0 },
];

export function buildSchools(approvedCount: number): SchoolDef[] {
  const out: SchoolDef[] = [];
  for (let s = 1; s <= approvedCount; s++) {
    out.push(schoolDef(out.length + 1, `A${1000 + s}`, REGIONS[(s - 1) % 3], s % 2 === 1 ? 'audited' : 'approved'));
  }
  // A9001.. unless the approved schools reach that far (8,001 or more): then right after them.
  const firstExtra = approvedCount > 8000 ? 1001 + approvedCount : 9001;
  EXTRA_STATES.forEach((e, k) => out.push(schoolDef(out.length + 1, `A${firstExtra + k}`, REGIONS[e.region], e.state)));
  return out;
}

function schoolDef(ord: number, id: string, region: RegionDef, state: AccessState): SchoolDef {
  const n = ord - 1;
  const country = { ...region.country };
  if (n % 3 === 2) delete country.iso_3166_2; // address_country with and without iso_3166_2
  const num = 2000 + ((n * 37) % 7000);
  return {
    ord,
    id,
    name: NAMES[n % NAMES.length] + (n >= NAMES.length ? ` ${n}` : ''),
    region,
    state,
    zone: n % 4 === 3 ? 'UTC' : region.zone,
    showTimezone: n % 5 !== 4,
    mis: state === 'offline' ? 'SIMS' : n % 7 === 6 ? null : MIS[n % MIS.length],
    establishmentNumber: n % 2 === 0 ? String(num) : num,
    laCode: n % 2 === 1 ? String(300 + n) : 300 + n,
    urn: 100000 + n * 1013,
    phase: n % 3 === 1 ? 'NOT APPLICABLE' : 'PRIMARY',
    address: {
      address_line_1: `${n + 1} School Lane`,
      address_line_2: n % 2 === 0 ? '' : 'Off "High" Street, Unit 2',
      address_town: TOWNS[n % TOWNS.length],
      address_postcode: region.code === 'uk' ? `LS${n + 1} ${n % 9}AB` : String(2000 + n),
      address_country: country,
    },
    extended: { allows_writeback: n % 2 === 0, has_timetables: n % 3 !== 2, has_lesson_attendance: n % 4 === 0 },
  };
}

export function isApproved(state: AccessState): boolean {
  return state === 'approved' || state === 'audited';
}
