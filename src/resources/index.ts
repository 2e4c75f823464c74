/**
 * Registry of built-in resources. Adding one is a file plus a line here.
 *
 *   resourceByName(name), RESOURCES, tableSchemas(spec), genericResource(def), deletionsFor(resources)
 */
import { achievementAttributes } from './achievement_attributes.ts';
import { achievements } from './achievements.ts';
import { assessmentAspects, assessmentResults, assessmentResultsets } from './assessment.ts';
import { deletionsFor } from './deletions.ts';
import { schoolAcl } from './school_acl.ts';
import { schoolMeta } from './school_meta.ts';
import { schoolPermissions } from './school_permissions.ts';
import { schools } from './schools.ts';
import type { ResourceSpec } from './types.ts';

const DATA_RESOURCES: ResourceSpec[] = [
  schools,
  schoolMeta,
  schoolPermissions,
  schoolAcl,
  achievements,
  achievementAttributes,
  assessmentAspects,
  assessmentResults,
  assessmentResultsets,
];

export const RESOURCES: ResourceSpec[] = [...DATA_RESOURCES, deletionsFor(DATA_RESOURCES)];

const BY_NAME = new Map(RESOURCES.map((r) => [r.name, r]));

export function resourceByName(name: string): ResourceSpec | undefined {
  return BY_NAME.get(name);
}

export { tableSchemas, columnName, fieldColumns } from './schema.ts';
export { genericResource, type GenericResourceDef } from './generic.ts';
export { deletionsFor, DELETION_FIELDS, PERSON_DELETION_TYPES } from './deletions.ts';
export type { ChildSpec, FieldSpec, FieldType, ResourceSpec } from './types.ts';
