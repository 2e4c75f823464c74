/**
 * The "wide" data shape (`dataShape: 'wide'`, docs/sandbox.md): the same resources, ids and
 * timelines as the standard shape, with the data a real service sends and the standard shape
 * spares us. Included students and employees carry a dozen fields nobody declares (names, MIS ids,
 * created_at/updated_at in their own zones); every datetime is shown in one of four zones picked
 * per value, and a quarter of the free ones (not updated_at) are wall times within 90 minutes of
 * a daylight-saving change (in the gap or the fold); text has commas, quotes, CR/LF, tabs, CJK
 * and emoji; nullable fields are null at random; numbers are sometimes sent as strings. Every
 * value is a pure function of (seed, school, resource, row, field), like the standard shape's.
 */
import { pick, rnd } from './hash.ts';
import { FORENAMES } from './people.ts';
import { dt, wallDt, type DateTimeObject, type Micros } from './time.ts';

export type DataShape = 'standard' | 'wide';
export const DATA_SHAPES: readonly DataShape[] = ['standard', 'wide'];

/** People per school in the wide shape (a secondary school's roll and staff). */
export const WIDE_STUDENTS = 1000;
export const WIDE_EMPLOYEES = 120;

const ZONES = ['Europe/London', 'Australia/Sydney', 'Africa/Johannesburg', 'UTC'] as const;

/** The wall time (seconds, as if UTC) at which each daylight-saving change of London and Sydney happens, 2022-2024. */
interface Transition {
  zone: string;
  localSec: number;
}

function sundayOnOrAfter(year: number, month: number, day: number): number {
  const d = new Date(Date.UTC(year, month, day));
  return day + ((7 - d.getUTCDay()) % 7);
}

function lastSunday(year: number, month: number): number {
  const last = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  return sundayOnOrAfter(year, month, last - 6);
}

const TRANSITIONS: readonly Transition[] = [2021, 2022, 2023, 2024]
  .flatMap((y) => [
    // London: 01:00 GMT -> 02:00 BST (the gap 01:00-02:00), 02:00 BST -> 01:00 GMT (the fold 01:00-02:00)
    { zone: 'Europe/London', localSec: Date.UTC(y, 2, lastSunday(y, 2), 1) / 1000 },
    { zone: 'Europe/London', localSec: Date.UTC(y, 9, lastSunday(y, 9), 2) / 1000 },
    // Sydney: 03:00 AEDT -> 02:00 AEST (the fold 02:00-03:00), 02:00 AEST -> 03:00 AEDT (the gap 02:00-03:00)
    { zone: 'Australia/Sydney', localSec: Date.UTC(y, 3, sundayOnOrAfter(y, 3, 1), 3) / 1000 },
    { zone: 'Australia/Sydney', localSec: Date.UTC(y, 9, sundayOnOrAfter(y, 9, 1), 2) / 1000 },
  ])
  .sort((a, b) => a.localSec - b.localSec);

const NINETY_MIN = 90 * 60;
/** a wall time 90 minutes after a transition is still before `us` when the transition is this far before it (zones are < 12 h off UTC) */
const MARGIN_SEC = NINETY_MIN + 12 * 3600;

/** An instant shown in one of the four zones (updated_at and other true instants). */
export function zoned(us: Micros, h: number): DateTimeObject {
  return dt(us, ZONES[h % ZONES.length]!);
}

/**
 * A free datetime: a quarter of them a wall time within 90 minutes either side of a
 * daylight-saving change (in its zone, so in the gap, the fold or next to them), the rest the
 * instant `us` shown in one of the four zones.
 */
export function edgeOrZoned(us: Micros, h: number, h2: number): DateTimeObject {
  if (h2 % 4 !== 0) return zoned(us, h);
  // one of the four changes before `us`: the value stays before the instant it stands for (created_at before updated_at)
  const before = us / 1_000_000 - MARGIN_SEC;
  let n = 0;
  while (n < TRANSITIONS.length && TRANSITIONS[n]!.localSec < before) n++;
  const t = TRANSITIONS[Math.max(0, n - 1 - ((h2 >>> 2) % 4))]!;
  const delta = ((h2 >>> 6) % (2 * NINETY_MIN + 1)) - NINETY_MIN;
  return wallDt(t.localSec + delta, (h >>> 3) % 1_000_000, t.zone);
}

const FRAGMENTS = [
  'Great work, as always',
  'She said "brilliant" twice',
  'Line one\nLine two',
  'Comma, "quote", and\r\nCRLF',
  'Tab\tseparated\tvalues',
  '优秀的学生，继续努力',
  '数学の宿題を提出しました',
  '학생이 열심히 했어요',
  'Star pupil 🌟🎉',
  'Helped a friend 🤝 at lunch 🍎',
  'Élève très appliquée — café au lait',
  "O'Brien helped; then left",
  'Read 3 books (target: 2)',
  '=SUM(A1:A2)',
  '+1 for teamwork',
  '-2 on the quiz, but improving',
  'Back slash \\ and / slash',
  'Zwölf Äpfel, naïve façade',
  'Ærø; Øst; Åse',
  'Rāwhiti, Māori names',
  'Stayed after school\r\nto tidy up',
  '50% better than last term',
  'Good "effort", poor "focus"',
  '',
];

/** A comment of one to four fragments: varied text, most of it needing CSV quoting somewhere. */
export function wideText(h: number, h2: number): string {
  const n = 1 + (h % 4);
  let s = pick(FRAGMENTS, h2);
  for (let k = 1; k < n; k++) s += (k % 2 ? ' ' : ', ') + pick(FRAGMENTS, (h2 >>> (5 * k)) + k * 7);
  return s;
}

const CLASSES = ['7A/Ma1', '8B/En2', '9C/Sc1', '10D/PE', 'Year 11 "Set 1"', '12, Further Maths', '13\tHistory', '理科 9X', 'Art 🎨 8Y'];
const MIDDLE = ['Mary', 'Jean-Luc', '美玲', 'Anne Marie', 'Kwame', 'Ðorđe', 'Ó'];
const SURNAMES = ['Smith', "O'Brien", 'Müller', '王', 'García-López', 'van der Berg', 'Dlamini', 'Ng', 'Smith, Jr.', 'Đặng', '"Quoted"'];
const TITLES = ['Mr', 'Mrs', 'Ms', 'Dr', 'Mx'];
const GENDERS = ['M', 'F', 'X'];
const JOBS = ['Teacher', 'Head of Year 9', 'Teaching Assistant, SEN', 'Science "Lead"', 'IT & Data Manager', 'Caretaker 🔧', '校长'];
const YEAR_GROUPS = ['7', '8', '9', '10', '11', '12', '13', 'Reception', 'N1'];

const DAY_US = 86_400_000_000;

/** null with probability 1/n (by hash), else the value. */
const orNull = <T>(h: number, n: number, v: () => T): T | null => (h % n === 0 ? null : v());

/** A number sent as text one time in five. */
const numberOrText = (h: number, v: number): number | string => (h % 5 === 0 ? String(v) : v);

export interface WideRow {
  stream: number;
  id: (i: number) => string;
  updated: (i: number) => Micros;
  created: (i: number) => Micros;
}

export function wideStudent(c: WideRow, i: number): Record<string, unknown> {
  const h = (k: number) => rnd(c.stream, i, 200 + k);
  const forename = pick(FORENAMES, h(1));
  const birth = Date.UTC(2008 + (h(2) % 10), h(2) % 12, 1 + (h(2) % 28)) * 1000;
  return {
    id: c.id(i),
    mis_id: numberOrText(h(3), 5000 + i),
    upn: orNull(h(4), 10, () => `K${String(820000000000 + i * 7).padStart(12, '0')}`),
    forename,
    preferred_forename: orNull(h(5), 2, () => pick(FORENAMES, h(5) >>> 3)),
    middle_names: orNull(h(6), 3, () => pick(MIDDLE, h(6) >>> 3)),
    surname: pick(SURNAMES, h(7)),
    legal_surname: orNull(h(8), 4, () => pick(SURNAMES, h(8) >>> 3)),
    gender: orNull(h(9), 20, () => pick(GENDERS, h(9) >>> 5)),
    year_group: orNull(h(10), 11, () => pick(YEAR_GROUPS, h(10) >>> 4)),
    form: orNull(h(11), 8, () => pick(CLASSES, h(11) >>> 4)),
    date_of_birth: dt(birth, 'UTC'),
    email: orNull(h(12), 5, () => `${forename.toLowerCase().replace(/[^a-z]/g, '') || 'pupil'}.${i}@school.example`),
    created_at: edgeOrZoned(c.created(i), h(13), h(14)),
    updated_at: zoned(c.updated(i), h(15)),
  };
}

export function wideEmployee(c: WideRow, i: number): Record<string, unknown> {
  const h = (k: number) => rnd(c.stream, i, 300 + k);
  const forename = pick(FORENAMES, h(1));
  const surname = pick(SURNAMES, h(2));
  return {
    id: c.id(i),
    mis_id: numberOrText(h(3), 9000 + i),
    title: orNull(h(4), 10, () => pick(TITLES, h(4) >>> 4)),
    forename,
    middle_names: orNull(h(5), 3, () => pick(MIDDLE, h(5) >>> 3)),
    surname,
    initials: [...forename][0]! + ([...surname.replace(/^\W+/, '')][0] ?? ''),
    job_title: orNull(h(6), 6, () => pick(JOBS, h(6) >>> 3)),
    staff_code: `${[...surname.replace(/\W/g, '')].slice(0, 2).join('').toUpperCase() || 'ZZ'}${i % 100}`,
    email: orNull(h(7), 8, () => `staff${i}@school.example`),
    start_date: orNull(h(8), 7, () => edgeOrZoned(c.created(i) - (h(8) % 3000) * DAY_US, h(9), h(10))),
    created_at: edgeOrZoned(c.created(i), h(11), h(12)),
    updated_at: zoned(c.updated(i), h(13)),
  };
}

export interface WideAchievementCtx extends WideRow {
  studentCount: number;
  employeeCount: number;
  types: readonly string[];
  actions: readonly string[];
  subjects: readonly string[];
}

export function wideAchievement(
  c: WideAchievementCtx,
  i: number,
): { fields: Record<string, unknown>; students: number[]; employees: number[] } {
  const h = (k: number) => rnd(c.stream, i, 400 + k);
  const updated = c.updated(i);
  // 1.85 students and 0.95 employees per achievement on average
  const s = h(1) % 20;
  const nStudents = s === 0 ? 0 : s <= 6 ? 1 : s <= 14 ? 2 : 3;
  const students: number[] = [];
  for (let k = 0; k < nStudents; k++) students.push((h(2) + k * 7919) % c.studentCount);
  const e = h(3) % 20;
  const nEmployees = e <= 2 ? 0 : e <= 17 ? 1 : 2;
  const employees: number[] = [];
  for (let k = 0; k < nEmployees; k++) employees.push((h(4) + k * 31) % c.employeeCount);
  const points = h(5) % 10 === 0 ? null : 1 + (h(5) % 5);
  const achieved = h(6) % 12 === 0 ? null : updated - (h(6) % 20) * DAY_US - (h(7) % 3_600_000_000);
  return {
    fields: {
      id: c.id(i),
      mis_id: numberOrText(h(8), 100000 + i),
      type: orNull(h(9), 7, () => pick(c.types, h(9) >>> 3)),
      action: orNull(h(10), 6, () => pick(c.actions, h(10) >>> 3)),
      subject: orNull(h(11), 5, () => pick(c.subjects, h(11) >>> 3)),
      class: orNull(h(12), 4, () => pick(CLASSES, h(12) >>> 3)),
      points: points === null ? null : numberOrText(h(13), points),
      total_points: points === null ? null : numberOrText(h(14), points * nStudents),
      comment: orNull(h(15), 7, () => wideText(h(16), h(17))),
      parents_notified: orNull(h(18), 9, () => (h(18) & 64) !== 0),
      achievement_date: achieved === null ? null : edgeOrZoned(achieved, h(19), h(20)),
      action_date: achieved === null || h(21) % 3 === 0 ? null : edgeOrZoned(achieved + DAY_US, h(22), h(23)),
      recorded_date: zoned(updated - (h(24) % 600) * 1_000_000, h(25)),
      created_at: zoned(c.created(i), h(26)),
      updated_at: zoned(updated, h(27)),
    },
    students,
    employees,
  };
}
