import type { ApiClient } from '../source/client.ts';
import { ApiError, ExportError } from '../errors.ts';
import { assertSafeId } from '../ids.ts';
import type { LooseJson } from './render.ts';

/**
 * Finding a school's own regional domain before calling anything about it. A service may answer a
 * school's paths only at that school's domain (404 elsewhere, even for GET /schools/{id}), so:
 *
 *   1. GET /schools/{id} at the default (discovery) domain;
 *   2. on 404, the same at each configured regional domain in turn (the token goes only to
 *      domains the user configured: the client refuses any other before sending);
 *   3. still not found: the discovery list of every school (/schools/all, default domain) names
 *      the school's region.domain; when that domain is not configured, the error says which
 *      --domain to add instead of a bare 404.
 *
 * The School object found is the one its own domain answered when it answered; its region.domain
 * is where every later call about the school goes.
 */
export interface LocatedSchool {
  school: LooseJson;
  /** The school's region.domain (undefined: the default domain). */
  domain: string | undefined;
}

/** An item URL answers the object itself; meta resources answer { data }. Accept either. */
export function unwrap(body: unknown): LooseJson | undefined {
  if (body && typeof body === 'object' && 'data' in body && !('id' in body)) return (body as { data: LooseJson }).data;
  return body as LooseJson | undefined;
}

export function domainOf(school: LooseJson): string | undefined {
  const d = school.region?.domain;
  return typeof d === 'string' && d ? d : undefined;
}

const isNotFound = (e: unknown) => e instanceof ApiError && e.status === 404;

async function getAt(client: ApiClient, id: string, domain: string | undefined): Promise<LooseJson | undefined> {
  try {
    const { body } = await client.getJson(`/schools/${id}`, { domain, ctx: { school: id, endpoint: '/schools/{id}' } });
    const school = unwrap(body);
    if (!school || typeof school !== 'object' || school.id !== id) {
      throw new ExportError(
        'E_PROTOCOL',
        `GET /schools/${id} at ${domain ?? 'the default domain'} answered something other than school ${id}`,
        {
          school: id,
          endpoint: '/schools/{id}',
        },
      );
    }
    return school;
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}

/** region.domain of the school as the discovery list of every school gives it, if listed. */
async function domainFromLists(client: ApiClient, id: string): Promise<LooseJson | undefined> {
  for await (const batch of client.paginate('/schools/all', { mode: 'offset', perPage: 100, ctx: { endpoint: '/schools/all' } })) {
    const found = (batch.rows as LooseJson[]).find((s) => s && s.id === id);
    if (found) return found;
  }
  return undefined;
}

/**
 * `regionalDomains`: the regional domains the user configured (--domain names, pipeline domains),
 * tried in order after the default domain.
 */
export async function locateSchool(client: ApiClient, id: string, regionalDomains: string[] = []): Promise<LocatedSchool> {
  assertSafeId(id);
  const atDefault = await getAt(client, id, undefined);
  if (atDefault) return { school: atDefault, domain: domainOf(atDefault) };
  for (const domain of regionalDomains) {
    const school = await getAt(client, id, domain);
    if (school) return { school, domain: domainOf(school) ?? domain };
  }
  const listed = await domainFromLists(client, id);
  const domain = listed ? domainOf(listed) : undefined;
  if (listed && domain) {
    client.baseFor(domain); // E_DOMAIN_NOT_ALLOWED, naming the --domain to add, when not configured
    const school = await getAt(client, id, domain);
    if (school) return { school, domain };
  }
  const tried = ['the default domain', ...regionalDomains].join(', ');
  throw new ExportError('E_NOT_FOUND', `school ${id} was not found at ${tried}, nor in the list of all schools: check the id`, {
    school: id,
    endpoint: '/schools/{id}',
    status: 404,
  });
}
