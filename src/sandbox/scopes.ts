/**
 * Property scopes (spec 5.3: "a property without an active scope has the value null"). One
 * convention, documented in docs/sandbox.md so a client can rely on it: a property permission has
 * identity `<resource>.<property>.read`, where `<resource>` names the table that holds the
 * property; a property whose permission the token lacks reads as null. The limited token lacks
 * every property permission listed here; the full token and school tokens have them all.
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

export function propertyIdentity(p: PropertyPermission): string {
  return `${p.resource}.${p.property}.read`;
}

const NONE: readonly string[] = [];
const LIMITED: Record<string, readonly string[]> = {};
for (const p of PROPERTY_PERMISSIONS) LIMITED[p.resource] = [...(LIMITED[p.resource] ?? []), p.property];

/** The properties of `resource` that read as null for a token with `scope` (computed once, not per row). */
export function maskedProperties(scope: Scope, resource: PropertyPermission['resource']): readonly string[] {
  return scope.full ? NONE : (LIMITED[resource] ?? NONE);
}
