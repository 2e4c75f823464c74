/**
 * Property scopes (spec 5.3: "a property without an active scope has the value null"). The spec
 * says a permission identity has the form `<resource>.<action>` (2.4) but not how a property's
 * permission is named, so the sandbox can name them several ways (option
 * `propertyPermissionNaming`, docs/sandbox.md "Tokens and scopes"): a client must learn the names
 * from the permissions list, never assume one. The limited token lacks every property permission
 * listed here; the full token and school tokens have them all.
 */
import type { Scope } from './school-data.ts';

export interface PropertyPermission {
  resource: 'schools' | 'school_meta' | 'achievements';
  property: string;
  name: string;
  /** Identity of the object permission it refines. */
  parent: string;
  group: string;
}

export const PROPERTY_PERMISSIONS: readonly PropertyPermission[] = [
  { resource: 'schools', property: 'mis', name: 'Read the name of the school MIS', parent: 'schools.read', group: 'School' },
  {
    resource: 'school_meta',
    property: 'custom_attendance_codes',
    name: 'Read whether the school has its own attendance codes',
    parent: 'schools.read',
    group: 'School',
  },
  { resource: 'achievements', property: 'comment', name: 'Read achievement comments', parent: 'achievements.read', group: 'Achievements' },
  {
    resource: 'achievements',
    property: 'parents_notified',
    name: 'Read whether parents were notified of achievements',
    parent: 'achievements.read',
    group: 'Achievements',
  },
];

/**
 * How property permissions are named (all are `<resource part>.read`, as spec 2.4 requires):
 * - dotted: `achievements.comment.read` (the default)
 * - underscore: `achievement_comment.read` (singular resource, joined with _)
 * - singular: `achievement.comment.read`
 * - kebab: `achievements-comment.read`
 * - upper: `ACHIEVEMENTS.COMMENT.READ`
 * - opaque: `ach_note_1.read`, a name that says nothing of the property: only a configured
 *   mapping (the exporter's `property_scopes`) can tell what it guards
 */
export type PropertyPermissionNaming = 'dotted' | 'underscore' | 'singular' | 'kebab' | 'upper' | 'opaque';
export const PROPERTY_PERMISSION_NAMINGS: readonly PropertyPermissionNaming[] = [
  'dotted',
  'underscore',
  'singular',
  'kebab',
  'upper',
  'opaque',
];

const singular = (resource: string) => resource.replace(/s$/, '');

export function propertyIdentity(p: PropertyPermission, naming: PropertyPermissionNaming = 'dotted'): string {
  switch (naming) {
    case 'dotted':
      return `${p.resource}.${p.property}.read`;
    case 'underscore':
      return `${singular(p.resource)}_${p.property}.read`;
    case 'singular':
      return `${singular(p.resource)}.${p.property}.read`;
    case 'kebab':
      return `${p.resource}-${p.property.replace(/_/g, '-')}.read`;
    case 'upper':
      return `${p.resource}.${p.property}.read`.toUpperCase();
    case 'opaque':
      return `${p.resource.slice(0, 3)}_note_${PROPERTY_PERMISSIONS.indexOf(p) + 1}.read`;
  }
}

const NONE: readonly string[] = [];
const LIMITED: Record<string, readonly string[]> = {};
for (const p of PROPERTY_PERMISSIONS) LIMITED[p.resource] = [...(LIMITED[p.resource] ?? []), p.property];

/** The properties of `resource` that read as null for a token with `scope` (computed once, not per row). */
export function maskedProperties(scope: Scope, resource: PropertyPermission['resource']): readonly string[] {
  return scope.full ? NONE : (LIMITED[resource] ?? NONE);
}
