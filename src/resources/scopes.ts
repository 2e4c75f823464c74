/**
 * Property scopes: a property without an active scope reads as null (spec 5.3). The spec fixes
 * the form of a permission identity (`<resource>.<action>`, 2.4) but not how a property's
 * permission is named, so names are learned from the service's own lists, never assumed:
 *
 * - an identity whose action is `read` and whose resource part names a resource and one of its
 *   properties guards that property, whatever the separators and case: `achievements.comment.read`,
 *   `achievement_comment.read`, `achievement.comment.read`, `achievements-comment.read`,
 *   `ACHIEVEMENTS.COMMENT.READ` (the resource singular or plural);
 * - the pipeline setting `property_scopes` ({"achievements.comment": "ach_note_3.read"}) names
 *   any other (checkPropertyScopes).
 *
 * This module is pure: what a run has learned, and what it concludes per school, is
 * pipeline/scope-knowledge.ts.
 */
import { ConfigError } from '../errors.ts';
import { tableSchemas } from './schema.ts';
import type { ResourceSpec } from './types.ts';

/** Properties known to be guarded by a property scope (resource -> properties), whatever the permission is named. */
export const PROPERTY_SCOPES: Readonly<Record<string, readonly string[]>> = {
  achievements: ['comment', 'parents_notified'],
};

/** A "table.column" key of property_scopes, and the form of a permission identity (`<resource>.<action>`). */
export const PROPERTY_KEY = /^([a-z][a-z0-9_]{0,62})\.([a-z][a-z0-9_]{0,62})$/;
export const PERMISSION_IDENTITY = /^[A-Za-z0-9_-]{1,100}(\.[A-Za-z0-9_-]{1,100}){1,5}$/;

/** Words of a name: split at `.`, `_`, `-`, spaces and lower-to-upper case changes, lower-cased. */
function words(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[._\-\s]+/)
    .filter(Boolean);
}

/** The resource's words as a permission may write them: the last word singular or plural. */
function resourceForms(resource: string): string[][] {
  const w = words(resource);
  const last = w[w.length - 1] ?? '';
  const head = w.slice(0, -1);
  const forms = new Set([last, last.replace(/ies$/, 'y'), last.replace(/s$/, ''), last.endsWith('s') ? last : `${last}s`]);
  if (last.endsWith('y')) forms.add(`${last.slice(0, -1)}ies`);
  return [...forms].filter(Boolean).map((f) => [...head, f]);
}

/** The words of a read permission's resource part (`achievement_comment.read` -> achievement comment); undefined for other actions. */
export function readPermissionWords(identity: string): string[] | undefined {
  const dot = identity.lastIndexOf('.');
  if (dot <= 0 || identity.slice(dot + 1).toLowerCase() !== 'read') return undefined;
  return words(identity.slice(0, dot));
}

/**
 * Every way a read permission's words can name one of the resource's properties (the resource
 * first, then the property; tolerant of case, separators, singular/plural), each as one key
 * (wordKey) -> the properties it names: a run matches each identity it meets with one lookup
 * instead of comparing it with every column of every table.
 */
export function propertyWordKeys(resource: string, properties: readonly string[]): Map<string, string[]> {
  const forms = resourceForms(resource);
  const keys = new Map<string, string[]>();
  for (const property of properties) {
    const prop = words(property);
    for (const key of new Set(forms.map((r) => wordKey([...r, ...prop])))) {
      const named = keys.get(key);
      if (named) named.push(property);
      else keys.set(key, [property]);
    }
  }
  return keys;
}

/** Words as one comparable key (words hold no spaces). */
export function wordKey(ws: readonly string[]): string {
  return ws.join(' ');
}

/** Identities compare without regard to case: `Achievement_Comment.Read` is the permission `achievement_comment.read`. */
export function identityKey(identity: string): string {
  return identity.toLowerCase();
}

/** The declared top-level columns of a resource's main table (the properties a permission can guard). */
export function propertyColumns(spec: ResourceSpec): string[] {
  const main = tableSchemas(spec)[0]!;
  return main.columns.map((c) => c.name).filter((n) => !n.startsWith('_') && !n.includes('__') && !spec.key.includes(n));
}

/**
 * Checks `property_scopes` (from the file, the environment or --property-scopes) against the
 * tables of this run, before any request: each key a "table.column" of a known table (a declared
 * column, for built-in tables), each value a permission identity `<resource>.<action>`. A problem
 * is a ConfigError naming the key. Returns "table.column" -> identity.
 */
export function checkPropertyScopes(
  raw: Record<string, unknown> | undefined,
  resources: readonly ResourceSpec[],
  o: { where: string; generic: ReadonlySet<string> },
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, identity] of Object.entries(raw ?? {})) {
    const at = `${o.where}: property_scopes.${key}`;
    const m = PROPERTY_KEY.exec(key);
    if (!m) throw new ConfigError(`${at}: expected a key TABLE.COLUMN (lowercase letters, digits and _, e.g. achievements.comment)`);
    if (typeof identity !== 'string' || !PERMISSION_IDENTITY.test(identity)) {
      throw new ConfigError(
        `${at}: expected a permission identity <resource>.<action> as the service lists it (e.g. achievement_comment.read), got ${JSON.stringify(identity)}`,
      );
    }
    const [, table, column] = m as unknown as [string, string, string];
    const spec = resources.find((r) => r.name === table);
    if (!spec) throw new ConfigError(`${at}: no such table (known: ${resources.map((r) => r.name).join(', ')})`);
    if (!o.generic.has(table)) {
      const known = propertyColumns(spec);
      if (!known.includes(column)) throw new ConfigError(`${at}: ${table} has no column ${column} (known: ${known.join(', ')})`);
    }
    out[key] = identity;
  }
  return out;
}

/** `--property-scopes achievements.comment=achievement_comment.read[,...]` (repeatable) -> the pipeline key's object. */
export function parsePropertyScopePairs(values: readonly string[], what: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of values.flatMap((v) => v.split(','))) {
    const t = pair.trim();
    if (!t) continue;
    const eq = t.indexOf('=');
    if (eq <= 0 || eq === t.length - 1) {
      throw new ConfigError(
        `${what} ${t}: expected TABLE.COLUMN=PERMISSION (e.g. achievements.comment=achievement_comment.read)`,
        'E_USAGE',
      );
    }
    out[t.slice(0, eq).trim()] = t.slice(eq + 1).trim();
  }
  return out;
}
