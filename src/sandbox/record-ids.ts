/**
 * Record ids: "A" + migration generation + school ordinal (4 digits) + resource kind (1 digit)
 * + row index (10 digits). Fixed widths keep them valid `A<digits>` ids that sort like their
 * row index; a completed migration bumps the generation, so every id of the school changes.
 */
export const KIND = {
  achievements: 1,
  achievement_attributes: 2,
  students: 3,
  employees: 4,
  assessment_aspects: 5,
  assessment_resultsets: 6,
  assessment_results: 7,
  templates: 8,
  other: 9,
} as const;

export type Kind = (typeof KIND)[keyof typeof KIND];

export function makeId(gen: number, ord: number, kind: number, i: number): string {
  return `A${gen + 1}${String(ord).padStart(4, '0')}${kind}${String(i).padStart(10, '0')}`;
}

const ID_RE = /^A(\d+)(\d{4})(\d)(\d{10})$/;

export function parseId(id: string): { gen: number; ord: number; kind: number; i: number } | null {
  const m = ID_RE.exec(id);
  if (!m) return null;
  return { gen: Number(m[1]) - 1, ord: Number(m[2]), kind: Number(m[3]), i: Number(m[4]) };
}
