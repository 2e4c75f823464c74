import { createHash } from 'node:crypto';
import type { Sink } from '../sink/types.ts';
import { ExportError } from '../errors.ts';
import { assertSafeId } from '../ids.ts';
import { redactEvent, schoolIdOf, type WebhookEvent } from './events.ts';

/**
 * The durable event log: one file per distinct event under `_state/_webhooks/events/`, named by
 * the sha256 of its canonical body (school token left out: it is never stored here), written
 * before the receiver answers 2xx. A per-school pointer names the last event applied to that
 * school, which is how a redelivery is told apart from a genuinely repeated event (see isDuplicate).
 */
export const EVENTS_PREFIX = '_state/_webhooks/events/';

export interface EventRecord {
  version: 1;
  id: string;
  payload_type: WebhookEvent['payload_type'];
  school_id?: string;
  event: Record<string, unknown>;
  /** every time this event was received and applied (a school may be approved, revoked, approved again) */
  received_at: string[];
  status: 'received' | 'applied';
  actions: string[];
}

export interface LastPointer {
  event_id: string;
  payload_type: string;
  applied_at: string;
}

export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v && typeof v === 'object') {
    const keys = Object.keys(v).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

export function eventId(e: WebhookEvent): string {
  return createHash('sha256')
    .update(canonicalJson(redactEvent(e)))
    .digest('hex');
}

export function eventPath(id: string): string {
  if (!/^[0-9a-f]{64}$/.test(id))
    throw new ExportError('E_UNSAFE_ID', `refusing event id ${id.slice(0, 70)}: expected a sha256 hex digest`);
  return `${EVENTS_PREFIX}${id}.json`;
}

export function lastPointerPath(schoolId: string): string {
  return `_state/_webhooks/last/school_id=${assertSafeId(schoolId)}.json`;
}

export async function readJson<T>(sink: Sink, path: string): Promise<T | undefined> {
  const buf = await sink.read(path);
  if (!buf) return undefined;
  try {
    return JSON.parse(buf.toString('utf8')) as T;
  } catch (e) {
    throw new ExportError('E_STATE', `${path} at ${sink.url} is unreadable (${(e as Error).message}): delete it`);
  }
}

export async function writeJson(sink: Sink, path: string, value: unknown): Promise<void> {
  await sink.writeAtomic(path, JSON.stringify(value, null, 2) + '\n');
}

/** Records the delivery (status 'received') before anything is acted on. */
export async function recordReceived(sink: Sink, e: WebhookEvent, at: string): Promise<EventRecord> {
  const id = eventId(e);
  const prev = await readJson<EventRecord>(sink, eventPath(id));
  const schoolId = schoolIdOf(e);
  const rec: EventRecord = {
    version: 1,
    id,
    payload_type: e.payload_type,
    ...(schoolId ? { school_id: schoolId } : {}),
    event: redactEvent(e),
    received_at: [...(prev?.received_at ?? []), at],
    status: 'received',
    actions: [],
  };
  await writeJson(sink, eventPath(id), rec);
  return rec;
}

export async function recordApplied(sink: Sink, rec: EventRecord, actions: string[]): Promise<void> {
  await writeJson(sink, eventPath(rec.id), { ...rec, status: 'applied', actions });
}

/**
 * A delivery is a duplicate when it is the event last applied to its school (same canonical body
 * and, when a token is sent, the token already kept: a rotated token is applied), or, for writebacks (no school), when it was applied before. The same body
 * after a different event (approved, revoked, approved again) is a new event and is applied.
 * The pointer is written only after the actions, so a crash mid-way makes the redelivery re-apply.
 */
export async function isDuplicate(sink: Sink, e: WebhookEvent, tokenUnchanged = true): Promise<boolean> {
  const id = eventId(e);
  const schoolId = schoolIdOf(e);
  if (!schoolId) return (await readJson<EventRecord>(sink, eventPath(id)))?.status === 'applied';
  const last = await readJson<LastPointer>(sink, lastPointerPath(schoolId));
  return last?.event_id === id && tokenUnchanged;
}

export async function writeLastPointer(sink: Sink, schoolId: string, p: LastPointer): Promise<void> {
  await writeJson(sink, lastPointerPath(schoolId), p);
}

/** Every stored event record, for `webhooks events` style listing and tests. */
export async function listEventRecords(sink: Sink): Promise<string[]> {
  return (await sink.list(EVENTS_PREFIX)).filter((p) => p.endsWith('.json'));
}
