/** Achievement rows and their attributes, generated from (stream, i). */
import { pick, rnd } from './hash.ts';
import { dt, dtOrNull, microsOf, type Micros } from './time.ts';

export interface AttributeDef {
  type: 'ACHIEVEMENT_TYPE' | 'EVENT_SUBJECT' | 'ACHIEVEMENT_OUTCOME';
  code: string;
  description: string;
  points: number | null;
  active: boolean;
  bullying: boolean;
}

export const ATTRIBUTES: readonly AttributeDef[] = [
  { type: 'ACHIEVEMENT_TYPE', code: 'HW', description: 'Homework', points: 1, active: true, bullying: false },
  { type: 'ACHIEVEMENT_TYPE', code: 'EF', description: 'Effort', points: 2, active: true, bullying: false },
  { type: 'ACHIEVEMENT_TYPE', code: 'CT', description: 'Citizenship, "kindness"', points: 3, active: true, bullying: true },
  { type: 'ACHIEVEMENT_TYPE', code: 'SP', description: 'Sport', points: null, active: true, bullying: false },
  { type: 'ACHIEVEMENT_TYPE', code: 'OLD', description: 'Legacy award', points: 5, active: false, bullying: false },
  { type: 'EVENT_SUBJECT', code: 'MA', description: 'Maths', points: null, active: true, bullying: false },
  { type: 'EVENT_SUBJECT', code: 'EN', description: 'English', points: null, active: true, bullying: false },
  { type: 'EVENT_SUBJECT', code: 'SC', description: 'Science', points: null, active: true, bullying: false },
  { type: 'EVENT_SUBJECT', code: 'PE', description: 'Physical Education', points: null, active: true, bullying: false },
  { type: 'EVENT_SUBJECT', code: 'LAT', description: 'Latin', points: null, active: false, bullying: false },
  { type: 'ACHIEVEMENT_OUTCOME', code: 'CERT', description: 'Certificate', points: null, active: true, bullying: false },
  { type: 'ACHIEVEMENT_OUTCOME', code: 'PC', description: 'Postcard home', points: null, active: true, bullying: false },
  { type: 'ACHIEVEMENT_OUTCOME', code: 'HT', description: "Headteacher's award 🏆", points: null, active: true, bullying: false },
  { type: 'ACHIEVEMENT_OUTCOME', code: 'STK', description: 'Sticker', points: null, active: true, bullying: false },
  { type: 'ACHIEVEMENT_OUTCOME', code: 'NONE', description: 'No action', points: null, active: false, bullying: false },
];

const BY_TYPE = {
  ACHIEVEMENT_TYPE: ATTRIBUTES.filter((a) => a.type === 'ACHIEVEMENT_TYPE' && a.active),
  EVENT_SUBJECT: ATTRIBUTES.filter((a) => a.type === 'EVENT_SUBJECT' && a.active),
  ACHIEVEMENT_OUTCOME: ATTRIBUTES.filter((a) => a.type === 'ACHIEVEMENT_OUTCOME' && a.active),
};

/** The active attributes' descriptions, by what an achievement's field names (the wide shape picks from these too). */
export const ATTRIBUTE_NAMES = {
  types: BY_TYPE.ACHIEVEMENT_TYPE.map((a) => a.description),
  actions: BY_TYPE.ACHIEVEMENT_OUTCOME.map((a) => a.description),
  subjects: BY_TYPE.EVENT_SUBJECT.map((a) => a.description),
};

/** Instants next to daylight-saving changes (London, Sydney) and other edges. */
export const SPECIAL_INSTANTS: readonly Micros[] = [
  '2024-03-31T00:30:00Z', // London 00:30 GMT, just before the spring-forward
  '2024-03-31T01:30:00Z', // London 02:30 BST, just after
  '2024-10-27T00:30:00Z', // London 01:30 BST: the repeated hour, first pass
  '2024-10-27T01:30:00Z', // London 01:30 GMT: the repeated hour, second pass
  '2024-04-06T15:30:00Z', // Sydney 02:30 AEDT (2024-04-07), before clocks go back
  '2024-04-06T16:30:00Z', // Sydney 02:30 AEST, after
  '2024-10-05T15:30:00Z', // Sydney 01:30 AEST (2024-10-06), before clocks go forward
  '2024-10-05T16:30:00Z', // Sydney 03:30 AEDT, after
  '2024-06-30T21:59:59.999Z', // Johannesburg 23:59:59.999 (no DST there)
  '2024-12-31T23:59:59Z', // year end in UTC, already next year in Sydney
].map(microsOf);

const COMMENTS = [
  'Great work, as always',
  'She said "brilliant" twice',
  'Line one\nLine two',
  '=SUM(A1:A2)',
  'Élève très appliquée — café au lait',
  '优秀的学生，继续努力',
  'Star pupil 🌟🎉',
  '',
  "O'Brien helped; then left",
  'Comma, "quote", and\r\nCRLF',
  '+1 for teamwork',
  'Tab\tseparated',
];
const CLASSES = ['7A/Ma1', '8B/En2', '9C/Sc1', '10D/PE', 'Year 11 "Set 1"'];

export interface AchievementCtx {
  stream: number;
  id: (i: number) => string;
  zone: string;
  updated: (i: number) => Micros;
  created: (i: number) => Micros;
  studentCount: number;
  employeeCount: number;
}

export interface AchievementBase {
  fields: Record<string, unknown>;
  students: number[];
  employees: number[];
}

const DAY_US = 86_400_000_000;

/** The fields of row i in API order (includes are added by the caller). */
export function achievementBase(c: AchievementCtx, i: number): AchievementBase {
  const h = rnd(c.stream, i, 1);
  const h2 = rnd(c.stream, i, 2);
  const updated = c.updated(i);
  const points = h % 19 === 0 ? null : 1 + (h % 5);
  const nStudents = h % 17 === 0 ? 0 : h % 5 === 0 ? 2 : 1;
  const students: number[] = [];
  for (let k = 0; k < nStudents; k++) students.push((h2 + k * 7919) % c.studentCount);
  const employees = h % 13 === 0 ? [] : [h2 % c.employeeCount];
  const achieved: Micros | null =
    i < SPECIAL_INSTANTS.length ? SPECIAL_INSTANTS[i] : h2 % 31 === 0 ? null : updated - (h2 % 20) * DAY_US - (h % 3_600_000_000);
  return {
    fields: {
      id: c.id(i),
      mis_id: String(100000 + i),
      type: h % 23 === 0 ? null : pick(BY_TYPE.ACHIEVEMENT_TYPE, h).description,
      action: h % 6 === 0 ? null : pick(BY_TYPE.ACHIEVEMENT_OUTCOME, h >>> 3).description,
      subject: h % 7 === 0 ? null : pick(BY_TYPE.EVENT_SUBJECT, h >>> 5).description,
      class: h % 4 === 0 ? null : pick(CLASSES, h >>> 7),
      points,
      total_points: points === null ? null : points * nStudents,
      comment: h2 % 9 === 0 ? null : pick(COMMENTS, h2 >>> 4),
      parents_notified: h % 11 === 0 ? null : (h & 64) !== 0,
      achievement_date: dtOrNull(achieved, c.zone),
      action_date: achieved === null || h % 3 === 0 ? null : dt(achieved + DAY_US, c.zone),
      recorded_date: dt(updated - (h % 600) * 1_000_000, c.zone),
      created_at: dt(c.created(i), 'UTC'),
      updated_at: dt(updated, c.zone),
    },
    students,
    employees,
  };
}

export function attributeFields(i: number, created: Micros, updated: Micros, zone: string): Record<string, unknown> {
  const a = ATTRIBUTES[i % ATTRIBUTES.length];
  return {
    mis_id: String(300 + i),
    type: a.type,
    code: a.code,
    active: a.active,
    points: a.points,
    description: a.description,
    bullying_type_enabled: a.bullying,
    created_at: dt(created, 'UTC'),
    updated_at: dt(updated, zone),
  };
}

export const ATTRIBUTES_PER_SCHOOL = ATTRIBUTES.length;
