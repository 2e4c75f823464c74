/**
 * Validation of achievement POST/PUT bodies (spec 4.5). Everything wrong with the body's content
 * is 422 with a message naming the field; a body that is not JSON at all was already a 400.
 */
import { HttpError } from './http-util.ts';
import type { Rec, SchoolData } from './school-data.ts';
import { dt, parseQueryDate } from './time.ts';

export interface AchievementWrite {
  patch: Rec;
  links: { students: number[]; employees: number[] };
}

function fail(msg: string): never {
  throw new HttpError(422, msg);
}

/** Active attribute of `type` whose code or id is `value`; 422 when missing or disabled. */
function attribute(data: SchoolData, type: string, value: unknown, field: string): Rec {
  if (typeof value !== 'string' || value === '') fail(`${field} must be the code or id of an ${type} attribute`);
  const col = data.cols.achievement_attributes;
  for (const i of col.view({}).keysAfter(-1)) {
    const a = data.render('achievement_attributes', i, new Set(), { full: true });
    if (a.type !== type || (a.code !== value && a.id !== value)) continue;
    if (a.active !== true) fail(`${field} "${value}" is disabled at this school`);
    return a;
  }
  fail(`${field} "${value}" is not an ${type} attribute of this school`);
}

function date(data: SchoolData, value: unknown, field: string): number {
  if (typeof value !== 'string') fail(`${field} must be a date string such as "2024-03-31" or "2024-03-31 13:45:00"`);
  const t = parseQueryDate(value, data.zone);
  if (t === null) fail(`${field} "${value}" is not a date such as "2024-03-31" or "2024-03-31 13:45:00"`);
  return t;
}

export function validateAchievement(data: SchoolData, body: unknown, singleStudentOnly: boolean): AchievementWrite {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) fail('the body must be a JSON object');
  const b = body as Rec;
  if (!Array.isArray(b.students) || b.students.length === 0) fail('students must be a non-empty array');
  if (singleStudentOnly && b.students.length > 1) fail("this school's MIS accepts only one student when editing an achievement");
  const students: number[] = [];
  let points = 0;
  let award: Rec | null = null;
  let awardDate: number | null = null;
  b.students.forEach((s: unknown, k: number) => {
    const st = (s ?? {}) as Rec;
    const i = typeof st.student_id === 'string' ? data.indexOf('students', st.student_id) : null;
    if (i === null) fail(`students[${k}].student_id is missing or not a student of this school`);
    if (!Number.isInteger(st.points)) fail(`students[${k}].points must be an integer`);
    if (st.award !== undefined) award = attribute(data, 'ACHIEVEMENT_OUTCOME', st.award, `students[${k}].award`);
    if (st.award_date !== undefined) awardDate = date(data, st.award_date, `students[${k}].award_date`);
    students.push(i);
    points += st.points as number;
  });
  const employee = typeof b.employee_id === 'string' ? data.indexOf('employees', b.employee_id) : null;
  if (employee === null) fail('employee_id is missing or not an employee of this school');
  if (b.lesson_id !== undefined && typeof b.lesson_id !== 'string') fail('lesson_id must be a string');
  const when = date(data, b.date, 'date');
  const type = attribute(data, 'ACHIEVEMENT_TYPE', b.type, 'type');
  const activity = b.activity_type === undefined ? null : attribute(data, 'EVENT_SUBJECT', b.activity_type, 'activity_type');
  if (b.comment !== undefined && b.comment !== null && typeof b.comment !== 'string') fail('comment must be a string');
  const first = b.students[0] as Rec;
  return {
    patch: {
      type: type.description,
      action: award === null ? null : (award as Rec).description,
      subject: activity === null ? null : activity.description,
      class: null,
      points: first.points,
      total_points: points,
      comment: typeof b.comment === 'string' ? b.comment : null,
      parents_notified: false,
      achievement_date: dt(when, data.zone),
      action_date: awardDate === null ? null : dt(awardDate, data.zone),
    },
    links: { students, employees: [employee] },
  };
}
