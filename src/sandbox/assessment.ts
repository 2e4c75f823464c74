/** Assessment aspects, result sets and results, generated from (stream, i). */
import { pick, rnd } from './hash.ts';
import { dt, dtOrNull, type Micros } from './time.ts';
import { SPECIAL_INSTANTS } from './achievements.ts';

export const ASPECTS_PER_SCHOOL = 12;
export const RESULTSETS_PER_SCHOOL = 6;
export const RESULTS_PER_SCHOOL = 240;
export const TEMPLATES_PER_SCHOOL = 3;

const ASPECT_NAMES = [
  'Reading',
  'Writing',
  'Maths',
  'Science',
  'Effort',
  'Behaviour grade',
  'Attainment, "KS2"',
  'Français',
  '数学',
  'PE 🏃',
];
const ASPECT_TYPES = ['GRADE', 'MARK', 'COMMENT', 'TARGET'];
/** min/max values: null, numbers or strings, as real schools have them. */
const BOUNDS: readonly [unknown, unknown][] = [
  [null, null],
  [0, 100],
  ['U', 'A*'],
  ['0.5', 9],
  [-10, '10'],
  [null, 'Mastery'],
];
const RESULTS = ['A', '7', 'Working towards', '12.50', '', 'B+', 'Exceeding, "greater depth"', '=1+1'];
const GRADES = ['12.50', '-0.5', '7', '0', '100.25', '3.0', '0.125'];
const TERMS = ['Autumn 2024', 'Spring 2024', 'Summer 2024', 'Baseline, Y7', 'Mock exams 🎓', 'Évaluation'];

export interface AssessCtx {
  stream: number;
  zone: string;
}

export function aspectFields(c: AssessCtx, i: number, created: Micros, updated: Micros): Record<string, unknown> {
  const h = rnd(c.stream, i, 1);
  const [min, max] = BOUNDS[i % BOUNDS.length];
  return {
    mis_id: 7000 + i,
    name: pick(ASPECT_NAMES, i),
    type: pick(ASPECT_TYPES, h),
    description: h % 5 === 0 ? '' : `Aspect ${i}: ${pick(ASPECT_NAMES, i)}\nsecond line`,
    min_value: min,
    max_value: max,
    created_at: dt(created, 'UTC'),
    updated_at: dt(updated, c.zone),
  };
}

export function resultsetFields(c: AssessCtx, i: number, created: Micros, updated: Micros): Record<string, unknown> {
  const h = rnd(c.stream, i, 2);
  const start = i % 3 === 2 ? null : Date.UTC(2024, (i * 4) % 12, 1) * 1000;
  return {
    mis_id: 8000 + i,
    name: pick(TERMS, i),
    module: i % 2 === 0 ? 'Assessment' : 'Assessment Manager',
    source: h % 2 === 0 ? 'MIS' : 'Import',
    supplier: h % 3 === 0 ? null : 'GL Assessment',
    external_id: `EXT-${1000 + i}`,
    locked: h % 4 === 0,
    start_date: dtOrNull(start, c.zone),
    end_date: start === null || i % 2 === 1 ? null : dt(start + 90 * 86_400_000_000 - 1, c.zone),
    created_at: dt(created, 'UTC'),
    updated_at: dt(updated, c.zone),
  };
}

export interface ResultLinks {
  student: number;
  aspect: number;
  resultset: number;
}

export function resultLinks(c: AssessCtx, i: number, students: number): ResultLinks {
  const h = rnd(c.stream, i, 3);
  return { student: h % students, aspect: i % ASPECTS_PER_SCHOOL, resultset: (i >>> 2) % RESULTSETS_PER_SCHOOL };
}

export function resultFields(c: AssessCtx, i: number, created: Micros, updated: Micros): Record<string, unknown> {
  const h = rnd(c.stream, i, 4);
  const collected = i < SPECIAL_INSTANTS.length ? SPECIAL_INSTANTS[i] : updated - (h % 40) * 86_400_000_000;
  return {
    mis_id: 9000 + i,
    result: pick(RESULTS, h),
    grade_value: pick(GRADES, h >>> 6),
    collection_date: dt(collected, c.zone),
    result_date: dt(collected + (h % 7) * 3_600_000_000, c.zone),
    created_at: dt(created, 'UTC'),
    updated_at: dt(updated, c.zone),
  };
}

export function templateOf(id: string, k: number): Record<string, unknown> {
  return { id, name: ['KS2 template', 'GCSE 9-1', 'Termly tracker'][k % 3] };
}
