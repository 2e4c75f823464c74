/**
 * Record ids: "A" + migration generation + school ordinal (4 digits; 5 past 9,999 schools) + resource kind (1 digit)
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

/**
 * An id of the school with this generation and ordinal: its kind and row index, or null. Read
 * against the school's own prefix, because past 9,999 schools the ordinal takes five digits and
 * only the school can tell them from the generation's.
 */
export function parseIdOf(id: string, gen: number, ord: number): { kind: number; i: number } | null {
  const prefix = `A${gen + 1}${String(ord).padStart(4, '0')}`;
  if (id.length !== prefix.length + 11 || !id.startsWith(prefix) || !/^\d{11}$/.test(id.slice(prefix.length))) return null;
  return { kind: Number(id[prefix.length]), i: Number(id.slice(prefix.length + 1)) };
}

/** Offset added to the row index in ids of the resources that share kind 0. */
export const INDEX_BASE: Partial<Record<keyof typeof KIND, number>> = {
  contacts: 1_000_000_000,
  groups: 2_000_000_000,
  classes: 3_000_000_000,
};

/** Seed of a resource's value stream: its kind, or a number of its own for the kind-0 resources. */
export const STREAM_KIND: Record<keyof typeof KIND, number> = { ...KIND, contacts: 10, groups: 11, classes: 12 };
