import { ConfigError } from '../errors.ts';
/**
 * Registry of built-in resources. Adding one is a file plus a line here.
 *
 *   resourceByName(name), RESOURCES, tableSchemas(spec), genericResource(def), deletionsFor(resources)
 */
import { achievementAttributes } from './achievement_attributes.ts';
import { achievements } from './achievements.ts';
import { assessmentAspects, assessmentResults, assessmentResultsets } from './assessment.ts';
import { deletionsFor } from './deletions.ts';
import { genericResource } from './generic.ts';
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

/** A resource declared in a pipeline file (`custom_resources`). */
export interface CustomResourceDef {
  name: string;
  path: string;
  key?: string[];
  incremental?: boolean;
  include?: string[];
}

/** Resolves resource names (built-in and the pipeline file's custom ones) before any request. */
export function selectResources(names: string[] | undefined, custom: readonly CustomResourceDef[]): ResourceSpec[] {
  const customSpecs = custom.map((c) =>
    genericResource({ name: c.name, path: c.path, key: c.key, incremental: c.incremental, include: c.include }),
  );
  for (const c of customSpecs) {
    if (resourceByName(c.name)) throw new ConfigError(`custom_resources ${c.name}: that name is a built-in table; choose another`);
  }
  const builtIn = RESOURCES.filter((r) => r.name !== 'deletions');
  const deletions = deletionsFor([...builtIn, ...customSpecs]);
  const all = [...builtIn, ...customSpecs, deletions];
  if (!names || names.length === 0) return all;
  const byName = new Map(all.map((r) => [r.name, r]));
  return names.map((n) => {
    const r = byName.get(n);
    if (!r)
      throw new ConfigError(
        `resources: unknown table ${JSON.stringify(n)} (known: ${[...byName.keys()].join(', ')}; declare others under custom_resources)`,
      );
    return r;
  });
}

export { tableSchemas, columnName, fieldColumns } from './schema.ts';
export { genericResource, type GenericResourceDef } from './generic.ts';
export { deletionsFor, DELETION_FIELDS, PERSON_DELETION_TYPES } from './deletions.ts';
export type { ChildSpec, FieldSpec, FieldType, ResourceSpec } from './types.ts';
