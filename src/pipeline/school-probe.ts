import { ApiError, ExportError } from '../errors.ts';
import { PROPERTY_SCOPES, propertyOfPermission } from '../resources/scopes.ts';
import { tableSchemas, type ResourceSpec } from '../resources/index.ts';
import type { ApiClient } from '../source/client.ts';
import type { SchoolRef } from './task-output.ts';

/** What one request per school tells the plan before any of its tasks runs. */
export interface SchoolProbe {
  /** 423 after the retry budget: the school is inactive; its tasks are skipped this run. */
  inactive?: ExportError;
  /** "table.column" values that will be null for lack of scope. */
  masked: string[];
  /** The permissions response, reused by the school_permissions task (no second request). */
  permissions?: { body: unknown; serverDate?: Date };
}

export const PERMISSIONS_PATH = '/meta/schools/{school_id}/permissions';

/**
 * Reads the school's applied permissions: an inactive school answers 423 here once, instead of
 * each of its tasks spending the retry budget; the permissions say which properties read as null.
 */
export async function probeSchool(client: ApiClient, school: SchoolRef, resources: readonly ResourceSpec[]): Promise<SchoolProbe> {
  let res: { body: unknown; serverDate?: Date };
  try {
    res = await client.getJson(PERMISSIONS_PATH.replace('{school_id}', school.id), {
      domain: school.domain,
      token: school.token,
      ctx: { school: school.id, endpoint: PERMISSIONS_PATH },
    });
  } catch (e) {
    if (e instanceof ApiError && e.status === 423) {
      const message = `school ${school.id} is inactive (423 school_inactive after the retry budget): its tasks were skipped; the next run tries again`;
      return { inactive: new ExportError('E_SCHOOL_INACTIVE', message, { school: school.id, status: 423, cause: e }), masked: [] };
    }
    if (e instanceof ExportError && e.code === 'E_AUTH') throw e; // a configuration error: the run stops
    return { masked: [] }; // the tasks meet the same problem and report it themselves
  }
  return { masked: maskedColumns(res.body, resources), permissions: res };
}

/** Declared columns whose property permission is absent from, or not approved in, the list. */
export function maskedColumns(body: unknown, resources: readonly ResourceSpec[]): string[] {
  const list = (body as { data?: unknown } | undefined)?.data;
  if (!Array.isArray(list)) return [];
  const granted = new Set<string>();
  const guarded = new Map<string, Set<string>>(Object.entries(PROPERTY_SCOPES).map(([r, props]) => [r, new Set(props)]));
  for (const p of list as { identity?: unknown; approved?: unknown }[]) {
    if (typeof p?.identity !== 'string') continue;
    const prop = propertyOfPermission(p.identity);
    if (prop) (guarded.get(prop.resource) ?? guarded.set(prop.resource, new Set()).get(prop.resource)!).add(prop.property);
    if (p.approved !== false) granted.add(p.identity);
  }
  const out: string[] = [];
  for (const spec of resources) {
    const columns = new Set(tableSchemas(spec)[0]!.columns.map((c) => c.name));
    for (const property of guarded.get(spec.name) ?? []) {
      if (columns.has(property) && !granted.has(`${spec.name}.${property}.read`)) out.push(`${spec.name}.${property}`);
    }
  }
  return out.sort();
}
