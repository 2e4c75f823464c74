import { isSafeId } from '../ids.ts';

/**
 * The webhook payloads of spec section 6, validated field by field. Validation is pure: it either
 * returns a typed event or the list of problems (answered with 422, and nothing is stored).
 */
interface SchoolFields {
  school_id: string;
  school_name: string;
}
interface SchoolIdentifiers {
  school_la_code: string;
  school_urn: string;
  school_establishment_number: string;
}
export interface WritebackEvent {
  payload_type: 'writeback';
  writeback_id: string;
  status: string;
  type: string;
}
export interface SchoolApprovedEvent extends SchoolFields, SchoolIdentifiers {
  payload_type: 'schoolApproved';
  school_token?: string;
}
export interface AccessRevokedEvent extends SchoolFields, SchoolIdentifiers {
  payload_type: 'accessRevoked';
  revoke_reason: string;
}
export interface AccessDeclinedEvent extends SchoolFields, SchoolIdentifiers {
  payload_type: 'accessDeclined';
  decline_reason: string;
}
export interface SchoolMigrationEvent extends SchoolFields {
  payload_type: 'schoolMigration';
  migrate_from: string;
  migrate_to: string;
  scheduled_at: string;
  completed_at: string | null;
}
export type WebhookEvent = WritebackEvent | SchoolApprovedEvent | AccessRevokedEvent | AccessDeclinedEvent | SchoolMigrationEvent;
export type SchoolEvent = Exclude<WebhookEvent, WritebackEvent>;
export const PAYLOAD_TYPES = ['writeback', 'schoolApproved', 'accessRevoked', 'accessDeclined', 'schoolMigration'] as const;

export type Validation = { ok: true; event: WebhookEvent } | { ok: false; problems: string[] };

type FieldKind = 'string' | 'identifier' | 'school_id' | 'iso8601' | 'iso8601|null' | 'optional-secret';
const SCHOOL: Record<string, FieldKind> = { school_id: 'school_id', school_name: 'string' };
// la_code, urn and establishment_number are "string or integer" everywhere else in the API, so an
// integer here is accepted and stored as its decimal text rather than rejecting a real delivery.
const IDENTIFIERS: Record<string, FieldKind> = {
  school_la_code: 'identifier',
  school_urn: 'identifier',
  school_establishment_number: 'identifier',
};
const FIELDS: Record<(typeof PAYLOAD_TYPES)[number], Record<string, FieldKind>> = {
  writeback: { writeback_id: 'string', status: 'string', type: 'string' },
  schoolApproved: { ...SCHOOL, ...IDENTIFIERS, school_token: 'optional-secret' },
  accessRevoked: { ...SCHOOL, ...IDENTIFIERS, revoke_reason: 'string' },
  accessDeclined: { ...SCHOOL, ...IDENTIFIERS, decline_reason: 'string' },
  schoolMigration: { ...SCHOOL, migrate_from: 'string', migrate_to: 'string', scheduled_at: 'iso8601', completed_at: 'iso8601|null' },
};

const ISO_RE = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?)?$/;
const MAX_TEXT = 2000;

export function isPayloadType(t: unknown): t is (typeof PAYLOAD_TYPES)[number] {
  return typeof t === 'string' && (PAYLOAD_TYPES as readonly string[]).includes(t);
}

export function validateEvent(body: unknown): Validation {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return { ok: false, problems: ['body must be a JSON object'] };
  const src = body as Record<string, unknown>;
  if (!isPayloadType(src.payload_type)) {
    return {
      ok: false,
      problems: [`unknown payload_type ${JSON.stringify(src.payload_type)?.slice(0, 40)}: expected one of ${PAYLOAD_TYPES.join(', ')}`],
    };
  }
  const problems: string[] = [];
  const out: Record<string, unknown> = { payload_type: src.payload_type };
  for (const [name, kind] of Object.entries(FIELDS[src.payload_type])) {
    const v = src[name];
    const r = checkField(kind, v);
    if (r === INVALID) problems.push(`${name}: ${describe(kind)}`);
    else if (r !== undefined) out[name] = r;
  }
  return problems.length ? { ok: false, problems } : { ok: true, event: out as unknown as WebhookEvent };
}

const INVALID = Symbol('invalid');
function checkField(kind: FieldKind, v: unknown): unknown {
  switch (kind) {
    case 'string':
      return typeof v === 'string' && v.length <= MAX_TEXT ? v : INVALID;
    case 'identifier':
      if (typeof v === 'string' && v.length <= 64) return v;
      return typeof v === 'number' && Number.isSafeInteger(v) ? String(v) : INVALID;
    case 'school_id':
      return isSafeId(v) ? v : INVALID;
    case 'iso8601':
      return isIso(v) ? v : INVALID;
    case 'iso8601|null':
      return v === null ? null : isIso(v) ? v : INVALID;
    case 'optional-secret':
      // absent when automatic school token generation is off; null is read the same way
      if (v === undefined || v === null) return undefined;
      return typeof v === 'string' && v.length > 0 && v.length <= 4096 && !/[\s\u0000-\u001f]/.test(v) ? v : INVALID;
  }
}

function isIso(v: unknown): v is string {
  return typeof v === 'string' && ISO_RE.test(v) && !Number.isNaN(Date.parse(v.replace(' ', 'T')));
}

function describe(kind: FieldKind): string {
  switch (kind) {
    case 'string':
      return `required string (at most ${MAX_TEXT} characters)`;
    case 'identifier':
      return 'required string (or integer)';
    case 'school_id':
      return 'required school id: "A" followed by digits';
    case 'iso8601':
      return 'required ISO 8601 date-time string';
    case 'iso8601|null':
      return 'required ISO 8601 date-time string, or null';
    case 'optional-secret':
      return 'when present, a non-empty string without whitespace';
  }
}

/** The event as it may be stored and logged: never the school token. */
export function redactEvent(e: WebhookEvent): Record<string, unknown> {
  const { school_token, ...rest } = e as WebhookEvent & { school_token?: string };
  return school_token === undefined ? rest : { ...rest, school_token_sent: true };
}

export function schoolIdOf(e: WebhookEvent): string | undefined {
  return e.payload_type === 'writeback' ? undefined : e.school_id;
}
