import type { ApiClient } from '../source/client.ts';
import { ApiError } from '../errors.ts';
import type { AccessContact } from './contacts.ts';
import { buildListQuery, SCHOOL_LISTS, type ListFilters, type SchoolListName } from './lists.ts';
import { locateSchool, unwrap } from './locate.ts';
import { groupPermissions, summarizeAcl, type LooseJson, type SchoolDetails } from './render.ts';

/**
 * Discovery and access calls (spec 4.2, 4.3). Lists come from the default (discovery) domain;
 * everything about one school goes to its region.domain, found first (locate.ts: the default
 * domain, then the configured regional domains, then the list of all schools). The client refuses
 * an unconfigured domain (E_DOMAIN_NOT_ALLOWED, nothing sent). `domains` are the configured
 * regional domain names, tried when the default domain does not know the school.
 */
export async function* listSchools(
  client: ApiClient,
  list: SchoolListName,
  filters: ListFilters = {},
  perPage = 100,
): AsyncGenerator<unknown> {
  const query = buildListQuery(list, filters);
  const path = SCHOOL_LISTS[list].path;
  // the school lists document page/per_page only, so offset pagination (following next URLs)
  for await (const batch of client.paginate(path, { query, mode: 'offset', perPage, ctx: { endpoint: path } })) {
    yield* batch.rows;
  }
}

/** The School object, from the school's own domain when the default domain does not know it. */
export async function getSchool(client: ApiClient, id: string, domains: string[] = []): Promise<LooseJson> {
  return (await locateSchool(client, id, domains)).school;
}

/** A 403 on one meta resource (the token lacks that scope) shows as "not available", not a failure. */
async function optional<T>(p: Promise<T>, notes: string[], what: string): Promise<T | null> {
  try {
    return await p;
  } catch (e) {
    if (e instanceof ApiError && e.status === 403) {
      notes.push(`${what}: not available to this token (403)`);
      return null;
    }
    throw e;
  }
}

export async function showSchool(
  client: ApiClient,
  id: string,
  o: { withUserType?: boolean; domains?: string[] } = {},
): Promise<SchoolDetails & { notes: string[] }> {
  const { school, domain } = await locateSchool(client, id, o.domains);
  client.baseFor(domain); // refuses an unconfigured domain before any request to it
  const ctx = { school: id };
  const notes: string[] = [];
  const [meta, perms, acl] = await Promise.all([
    optional(client.getJson(`/meta/schools/${id}`, { domain, ctx: { ...ctx, endpoint: '/meta/schools/{id}' } }), notes, 'meta'),
    optional(
      client.getJson(`/meta/schools/${id}/permissions`, { domain, ctx: { ...ctx, endpoint: '/meta/schools/{id}/permissions' } }),
      notes,
      'permissions',
    ),
    optional(
      client.getJson(`/meta/schools/${id}/acl`, {
        domain,
        query: { with_user_type: o.withUserType ? 'true' : undefined },
        ctx: { ...ctx, endpoint: '/meta/schools/{id}/acl' },
      }),
      notes,
      'acl',
    ),
  ]);
  const permList = perms ? unwrap(perms.body) : [];
  return {
    school,
    meta: meta ? (unwrap(meta.body) as Record<string, unknown>) : null,
    permissions: groupPermissions(Array.isArray(permList) ? permList : []),
    acl: acl ? summarizeAcl(unwrap(acl.body), Boolean(o.withUserType)) : null,
    notes,
  };
}

export interface AccessResult {
  school_id: string;
  success: boolean;
  state: string;
  message: string;
}

function accessResult(id: string, body: unknown): AccessResult {
  const b = (unwrap(body) ?? {}) as Record<string, unknown>;
  return {
    school_id: id,
    success: b.success === true,
    state: typeof b.state === 'string' ? b.state : 'unknown',
    message: typeof b.message === 'string' ? b.message : '',
  };
}

/** The school is looked up first so the request goes to its own regional domain. */
export async function requestAccess(
  client: ApiClient,
  id: string,
  contacts: AccessContact[],
  domains: string[] = [],
): Promise<AccessResult> {
  const { domain } = await locateSchool(client, id, domains);
  const r = await client.send('POST', `/schools/${id}/request-access`, {
    domain,
    body: { contacts },
    ctx: { school: id, endpoint: '/schools/{id}/request-access' },
  });
  return accessResult(id, r.body);
}

export async function revokeAccess(client: ApiClient, id: string, domains: string[] = []): Promise<AccessResult> {
  const { domain } = await locateSchool(client, id, domains);
  const r = await client.send('DELETE', `/schools/${id}/revoke-access`, {
    domain,
    ctx: { school: id, endpoint: '/schools/{id}/revoke-access' },
  });
  return accessResult(id, r.body);
}
