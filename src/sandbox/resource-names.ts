/** The resources the sandbox keeps per school, their names, deletion types and base timelines. */
export const RESOURCES = [
  'achievements',
  'achievement_attributes',
  'students',
  'employees',
  'assessment_aspects',
  'assessment_resultsets',
  'assessment_results',
  'contacts',
  'groups',
  'classes',
] as const;
export type ResourceName = (typeof RESOURCES)[number];

const ALIASES: Record<string, ResourceName> = {
  attributes: 'achievement_attributes',
  aspects: 'assessment_aspects',
  results: 'assessment_results',
  resultsets: 'assessment_resultsets',
};

export function resourceName(name: string): ResourceName | null {
  if ((RESOURCES as readonly string[]).includes(name)) return name as ResourceName;
  return ALIASES[name] ?? null;
}

/** Deletion type recorded when a row of the resource is removed (spec 4.4); assessment items and attributes have none. */
export const DELETION_TYPE: Partial<Record<ResourceName, string>> = {
  achievements: 'achievement',
  students: 'student',
  employees: 'employee',
  contacts: 'contact',
  groups: 'group',
  classes: 'class',
};

/** Base timeline per resource: first updated_at, spacing, and a jitter below the spacing (so updated_at grows with i). */
export const TIMELINE: Record<ResourceName, { start: string; stepUs: number }> = {
  achievements: { start: '2024-01-10T08:00:00Z', stepUs: 20_000_000 },
  achievement_attributes: { start: '2023-09-01T07:00:00Z', stepUs: 86_400_000_000 },
  students: { start: '2023-09-02T07:00:00Z', stepUs: 3_600_000_000 },
  employees: { start: '2023-09-03T07:00:00Z', stepUs: 3_600_000_000 },
  assessment_aspects: { start: '2024-02-01T09:00:00Z', stepUs: 86_400_000_000 },
  assessment_resultsets: { start: '2024-02-15T09:00:00Z', stepUs: 86_400_000_000 },
  assessment_results: { start: '2024-03-01T09:00:00Z', stepUs: 600_000_000 },
  contacts: { start: '2023-09-04T07:00:00Z', stepUs: 3_600_000_000 },
  groups: { start: '2023-09-01T08:00:00Z', stepUs: 86_400_000_000 },
  classes: { start: '2023-09-01T09:00:00Z', stepUs: 86_400_000_000 },
};

/** Base rows' updated_at stay within this span from their start (about 18 months). */
export const BASE_SPAN_US = 47_000_000_000_000;
