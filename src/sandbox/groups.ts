/** Groups and classes: resources the spec leaves unshown, so their fields are our choice (docs/sandbox.md). */
import { pick, rnd } from './hash.ts';
import type { PersonCtx } from './people.ts';
import { dt } from './time.ts';

export const GROUPS_PER_SCHOOL = 12;
export const CLASSES_PER_SCHOOL = 30;

const GROUP_TYPES = ['YEAR', 'REGISTRATION', 'HOUSE'] as const;
const HOUSES = ['Red', 'Blue', 'Green', 'Ørsted', 'Kōwhai'];
const SUBJECTS = ['Ma', 'En', 'Sc', 'PE', 'Fr', 'Hi'];

export function renderGroup(c: PersonCtx, i: number): Record<string, unknown> {
  const type = GROUP_TYPES[i % GROUP_TYPES.length];
  const n = Math.floor(i / GROUP_TYPES.length);
  const name = type === 'YEAR' ? `Year ${7 + n}` : type === 'REGISTRATION' ? `${7 + n}${'ABCD'[n % 4]}` : `${pick(HOUSES, n)} House`;
  return {
    id: c.id(i),
    mis_id: String(600 + i),
    name,
    code: name.replace(/\s+/g, '').toUpperCase(),
    type,
    description: rnd(c.stream, i, 1) % 4 === 0 ? null : `${name} (${type.toLowerCase()} group)`,
    created_at: dt(c.created(i), 'UTC'),
    updated_at: dt(c.updated(i), c.zone),
  };
}

export function renderClass(c: PersonCtx, i: number): Record<string, unknown> {
  const subject = SUBJECTS[i % SUBJECTS.length];
  const year = 7 + (Math.floor(i / SUBJECTS.length) % 5);
  const code = `${year}${'ABC'[i % 3]}/${subject}${1 + (i % 2)}`;
  return {
    id: c.id(i),
    mis_id: String(800 + i),
    name: code,
    code,
    description: rnd(c.stream, i, 1) % 5 === 0 ? null : `Year ${year} ${subject} set ${1 + (i % 2)}`,
    created_at: dt(c.created(i), 'UTC'),
    updated_at: dt(c.updated(i), c.zone),
  };
}
