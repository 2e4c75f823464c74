/** Students and employees: only seen as includes and deletion types, so their fields are our choice (docs/sandbox.md). */
import { pick, rnd } from './hash.ts';
import { dt, type Micros } from './time.ts';

export const STUDENTS_PER_SCHOOL = 200;
export const EMPLOYEES_PER_SCHOOL = 40;

/** Forenames with the accents, scripts and punctuation a school's people have (the wide shape uses them too). */
export const FORENAMES = [
  'Zoë',
  'José',
  '陈',
  'Siobhán',
  'Łukasz',
  'Aïsha',
  'Nguyễn',
  "D'Arcy",
  'Ólafur',
  'Thandiwe',
  'Mia',
  'Noah',
  'Renée',
  '🦄 Unicorn',
];
const SURNAMES = ['Smith', "O'Brien", 'Müller', '王', 'García-López', 'van der Berg', 'Dlamini', 'Ng', 'Smith, Jr.', 'Đặng', '"Quoted"'];
const TITLES = ['Mr', 'Mrs', 'Ms', 'Dr', 'Mx'];

export interface PersonCtx {
  stream: number;
  zone: string;
  id: (i: number) => string;
  updated: (i: number) => Micros;
  created: (i: number) => Micros;
}

export function renderStudent(c: PersonCtx, i: number): Record<string, unknown> {
  const h = rnd(c.stream, i, 1);
  const birth = Date.UTC(2010 + (h % 8), h % 12, 1 + (h % 28)) * 1000;
  return {
    id: c.id(i),
    mis_id: String(5000 + i),
    upn: h % 9 === 0 ? null : `K${String(820000000000 + i * 7).padStart(12, '0')}`,
    forename: pick(FORENAMES, h),
    surname: pick(SURNAMES, h >>> 8),
    year_group: h % 11 === 0 ? null : String(1 + (h % 13)),
    date_of_birth: dt(birth, 'UTC'),
    created_at: dt(c.created(i), 'UTC'),
    updated_at: dt(c.updated(i), c.zone),
  };
}

export function renderEmployee(c: PersonCtx, i: number): Record<string, unknown> {
  const h = rnd(c.stream, i, 2);
  const forename = pick(FORENAMES, h);
  const surname = pick(SURNAMES, h >>> 8);
  return {
    id: c.id(i),
    mis_id: String(9000 + i),
    title: h % 10 === 0 ? null : pick(TITLES, h >>> 4),
    forename,
    surname,
    initials: [...forename][0]! + ([...surname.replace(/^\W+/, '')][0] ?? ''),
    created_at: dt(c.created(i), 'UTC'),
    updated_at: dt(c.updated(i), c.zone),
  };
}

export const CONTACTS_PER_SCHOOL = 300;

/** Contacts (parents, carers): the same person fields as employees, without initials. */
export function renderContact(c: PersonCtx, i: number): Record<string, unknown> {
  const h = rnd(c.stream, i, 3);
  return {
    id: c.id(i),
    mis_id: String(7000 + i),
    title: h % 8 === 0 ? null : pick(TITLES, h >>> 4),
    forename: pick(FORENAMES, h),
    surname: pick(SURNAMES, h >>> 8),
    created_at: dt(c.created(i), 'UTC'),
    updated_at: dt(c.updated(i), c.zone),
  };
}
