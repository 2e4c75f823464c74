/**
 * Property scopes: a property without an active scope reads as null (spec 5.3). The service names
 * a property's permission `<resource>.<property>.read` (the sandbox does the same), and lists the
 * permissions applied at a school under /meta/schools/{id}/permissions. These are the properties
 * known to be guarded that way; a permission of that form seen in any school's list counts too.
 */
export const PROPERTY_SCOPES: Readonly<Record<string, readonly string[]>> = {
  achievements: ['comment', 'parents_notified'],
};

/** `achievements.comment.read` -> { resource: 'achievements', property: 'comment' } */
export function propertyOfPermission(identity: string): { resource: string; property: string } | undefined {
  const m = /^([a-z][a-z0-9_]*)\.([a-z][a-z0-9_]*)\.read$/.exec(identity);
  return m ? { resource: m[1]!, property: m[2]! } : undefined;
}
