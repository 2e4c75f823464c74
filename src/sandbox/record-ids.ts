/**
 * Record ids: "A" + migration generation + school ordinal (4 digits) + resource kind (1 digit)
 * + row index (10 digits). Fixed widths keep them valid `A<digits>` ids that sort like their
 * row index; a completed migration bumps the generation, so every id of the school changes.
 * Kind 0 is shared by contacts, groups and classes: the first digit of the index tells them
 * apart (INDEX_BASE), leaving 9 digits for the row.
 */
export const KIND = {
  contacts: 0,
  groups: 0,
  classes: 0,
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

/** Offset added to the row index in ids of the resources that share kind 0. */
export const INDEX_BASE: Partial<Record<keyof typeof KIND, number>> = {
  contacts: 1_000_000_000,
  groups: 2_000_000_000,
  classes: 3_000_000_000,
};

/** Seed of a resource's value stream: its kind, or a number of its own for the kind-0 resources. */
export const STREAM_KIND: Record<keyof typeof KIND, number> = { ...KIND, contacts: 10, groups: 11, classes: 12 };
