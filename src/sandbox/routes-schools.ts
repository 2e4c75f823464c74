/** Discovery, school meta and access management (spec 4.2, 4.3). */
import { arraySource } from './collection.ts';
import { ALPHA2, isApproved, type AccessState } from './fixtures.ts';
import { HttpError, readJson } from './http-util.ts';
import { KIND, makeId } from './record-ids.ts';
import { dateParam, gateSchool, itemReply, listReply, requireFull, type Handler, type Reply } from './route-kit.ts';
import type { Scope } from './school-data.ts';
import { PROPERTY_PERMISSIONS, maskedProperties, propertyIdentity, type PropertyPermissionNaming } from './scopes.ts';
import { dt } from './time.ts';
import type { SchoolState } from './world.ts';

export function renderSchool(s: SchoolState, scope: Scope): Record<string, unknown> {
  const identifiers = { la_code: s.laCode, establishment_number: s.establishmentNumber, urn: s.urn };
  const out: Record<string, unknown> = {
    id: s.id,
    name: s.name,
    establishment_number: s.establishmentNumber,
    urn: s.urn,
    phase_of_education: s.phase,
    la_code: s.laCode,
    timezone: s.showTimezone ? s.zone : null,
    mis: s.mis,
    address: s.address,
    extended: s.extended,
    region: { code: s.region.code, domain: s.region.domain, school_url: `https://${s.region.domain}/v1.0/schools/${s.id}`, identifiers },
  };
  for (const k of maskedProperties(scope, 'schools')) out[k] = null;
  return out;
}

type ListName = 'approved' | 'all' | AccessState;

const FILTERS: Record<ListName, readonly string[]> = {
  approved: ['updated', 'postcode', 'la_code', 'establishment_number', 'iso_3166_2'],
  all: ['updated', 'postcode', 'la_code', 'establishment_number', 'urn'],
  pending: ['updated', 'postcode', 'la_code', 'establishment_number'],
  audited: ['updated', 'postcode', 'la_code', 'establishment_number'],
  offline: ['updated', 'postcode', 'la_code', 'establishment_number'],
  revoked: [],
  declined: [],
};

function inList(s: SchoolState, list: ListName): boolean {
  if (list === 'all') return true;
  if (list === 'approved') return isApproved(s.state);
  return s.state === list;
}

export function schoolList(list: ListName): Handler {
  return (ctx) => {
    const f = new Set(FILTERS[list]);
    const q = ctx.url.searchParams;
    const after = f.has('updated') ? dateParam(ctx, 'updated_after') : undefined;
    const before = f.has('updated') ? dateParam(ctx, 'updated_before') : undefined;
    const postcode = f.has('postcode') ? q.get('postcode') : null;
    const la = f.has('la_code') ? q.get('la_code') : null;
    const est = f.has('establishment_number') ? q.get('establishment_number') : null;
    const iso = f.has('iso_3166_2') ? q.get('iso_3166_2') : null;
    const urnText = f.has('urn') ? q.get('urn') : null;
    if (urnText !== null && !/^\d+$/.test(urnText)) throw new HttpError(400, 'urn must be an integer');
    const isoCodes =
      iso === null
        ? null
        : iso
            .split(',')
            .map((c) => c.trim().toUpperCase())
            .filter(Boolean);
    const norm = (t: string) => t.replace(/\s+/g, '').toUpperCase();
    const source = arraySource(
      ctx.world.schools,
      (s) => s.ord,
      (s) => {
        if (!inList(s, list)) return false;
        if (!ctx.isDefault && s.region.code !== ctx.region.code) return false; // regional listeners list their own schools
        if (after !== undefined && !(s.updated > after)) return false;
        if (before !== undefined && !(s.updated < before)) return false;
        if (postcode !== null && !norm(String(s.address.address_postcode)).includes(norm(postcode))) return false;
        if (la !== null && String(s.laCode) !== la) return false;
        if (est !== null && String(s.establishmentNumber) !== est) return false;
        if (urnText !== null && s.urn !== Number(urnText)) return false;
        if (isoCodes !== null) {
          const c = s.address.address_country as { code: string; iso_3166_2?: string };
          const ok = isoCodes.some(
            (code) => code === ALPHA2[c.code] || (c.iso_3166_2 !== undefined && code === c.iso_3166_2.toUpperCase()),
          );
          if (!ok) return false;
        }
        return true;
      },
    );
    return listReply(ctx, source, (ord) => renderSchool(ctx.world.schools[ord - 1], ctx.scope));
  };
}

export const oneSchool: Handler = (ctx, [id]) => {
  const s = ctx.world.byId.get(id);
  // Lenient: discovery answers for every school on the default listener; regional ones (and every
  // listener in the strict region mode) only for their own schools.
  const anySchoolHere = ctx.isDefault && ctx.world.regionMode === 'lenient';
  if (!s || (!anySchoolHere && s.region.code !== ctx.region.code)) throw new HttpError(404, `school ${id} not found`);
  return itemReply(ctx, renderSchool(s, ctx.scope));
};

export const schoolMeta: Handler = (ctx, [id]) => {
  const s = gateSchool(ctx, id, 'meta', false)!;
  const data: Record<string, unknown> = {
    online: s.state !== 'offline',
    approved: isApproved(s.state) || s.state === 'offline',
    audited: s.state === 'audited',
    custom_attendance_codes: s.ord % 2 === 0,
  };
  for (const k of maskedProperties(ctx.scope, 'school_meta')) data[k] = null;
  return { body: { data } };
};

const PERMISSIONS = [
  { identity: 'schools.read', name: 'Read school', group: 'School', parent: null, optional: false, full: false },
  { identity: 'achievements.read', name: 'Read achievements', group: 'Achievements', parent: null, optional: false, full: false },
  {
    identity: 'achievements.write',
    name: 'Create and edit achievements',
    group: 'Achievements',
    parent: 'achievements.read',
    optional: true,
    full: false,
  },
  {
    identity: 'achievements.delete',
    name: 'Delete achievements',
    group: 'Achievements',
    parent: 'achievements.read',
    optional: true,
    full: true,
  },
  {
    identity: 'assessment.read',
    name: 'Read assessment aspects and result sets',
    group: 'Assessment',
    parent: null,
    optional: false,
    full: false,
  },
  {
    identity: 'assessment_results.read',
    name: 'Read assessment results',
    group: 'Assessment',
    parent: 'assessment.read',
    optional: true,
    full: true,
  },
  { identity: 'acl.read', name: 'Read the access control list', group: 'School', parent: null, optional: true, full: true },
];

/** Property permissions, named as the sandbox was told to: the limited token lacks them, so it reads those properties as null. */
const propertyPermissions = (naming: PropertyPermissionNaming) =>
  PROPERTY_PERMISSIONS.map((p) => ({
    identity: propertyIdentity(p, naming),
    name: p.name,
    group: p.group,
    parent: p.parent,
    optional: true,
    full: true,
  }));

export const schoolPermissions: Handler = (ctx, [id]) => {
  const s = gateSchool(ctx, id, 'meta', false)!;
  const from = dt(Date.parse('2024-01-02T09:00:00Z') * 1000 + s.ord * 1_000_000, s.zone);
  const all = [...PERMISSIONS, ...propertyPermissions(ctx.world.opts.propertyPermissionNaming)];
  const data = all
    .filter((p) => ctx.scope.full || !p.full)
    .map((p) => ({
      identity: p.identity,
      name: p.name,
      description: `${p.name} (sandbox)`,
      parent: p.parent,
      group: p.group,
      active_from: from,
      optional: p.optional,
      approved: isApproved(s.state),
      audited: s.state === 'audited',
    }));
  return { body: { data } };
};

export const schoolAcl: Handler = (ctx, [id]) => {
  const s = gateSchool(ctx, id, 'meta', false)!;
  requireFull(ctx, 'the access control list');
  const v = ctx.url.searchParams.get('with_user_type');
  if (v !== null && !['true', 'false', '1', '0'].includes(v)) throw new HttpError(400, 'with_user_type must be true or false');
  const typed = v === 'true' || v === '1';
  const mode = [null, 'whitelist', 'blacklist'][s.ord % 3];
  const gen = s.data?.gen ?? 0;
  const people =
    mode === null
      ? []
      : [
          { id: makeId(gen, s.ord, KIND.students, 3), type: 'student' },
          { id: makeId(gen, s.ord, KIND.students, 7), type: 'student' },
          { id: makeId(gen, s.ord, KIND.other, 900), type: 'contact' },
        ];
  return { body: { data: { mode, ids: typed ? people : people.map((p) => p.id) } } };
};

export const requestAccess: Handler = async (ctx, [id]): Promise<Reply> => {
  const s = gateSchool(ctx, id, 'access', false)!;
  const raw = await readJson(ctx.req);
  // Contacts are optional ("recommended"): no body, {} and [] (PHP's empty array, which the
  // official client sends when given no contacts) all mean "no contacts".
  const body = (Array.isArray(raw) && raw.length === 0 ? {} : raw) as { contacts?: unknown };
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new HttpError(400, 'request body must be a JSON object such as {"contacts": [...]} (or empty, {} or [] for no contacts)');
  }
  if (body.contacts !== undefined) {
    if (!Array.isArray(body.contacts)) throw new HttpError(422, 'contacts must be an array');
    body.contacts.forEach((c: Record<string, unknown>, k: number) => {
      for (const f of ['first_name', 'last_name', 'email_address']) {
        if (typeof c?.[f] !== 'string' || c[f] === '') throw new HttpError(422, `contacts[${k}].${f} is required`);
      }
    });
  }
  if (isApproved(s.state)) return { body: { success: false, state: s.state, message: 'Access is already approved' } };
  await ctx.world.setAccess(s, 'pending', false);
  return { body: { success: true, state: 'pending', message: 'Access requested; the school will be asked to approve it' } };
};

export const revokeAccess: Handler = async (ctx, [id]) => {
  const s = gateSchool(ctx, id, 'access', false)!;
  await ctx.world.setAccess(s, 'revoked', false);
  return { body: { success: true, state: 'revoked', message: 'Access revoked' } };
};
