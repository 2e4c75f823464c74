import { listSchools } from '../discovery/service.ts';
import { isSafeId, isSafeRegion } from '../ids.ts';
import { listStates, readDirective, statePath } from '../manifest/state-store.ts';
import type { Sink } from '../sink/types.ts';
import type { ApiClient } from '../source/client.ts';
import { applyWebhookEvent } from '../webhooks/apply.ts';
import type { AccessDeclinedEvent, AccessRevokedEvent } from '../webhooks/events.ts';
import { shardOf } from './shard.ts';

const LISTS = [
  { list: 'revoked', payload: 'accessRevoked' },
  { list: 'declined', payload: 'accessDeclined' },
] as const;

/**
 * Webhooks are one attempt with no delivery guarantee: a receiver that was down never hears
 * `accessRevoked`. So each run asks the service which schools revoked or declined access and
 * treats those it still holds data or state for exactly as if the webhook had arrived (the same
 * code path: directive, and purge when purge_on_revoke is set). Returns one note per school.
 */
export async function reconcileRevocations(
  client: ApiClient,
  sink: Sink,
  o: { runId: string; purge: boolean; shard: { index: number; count: number }; now: Date },
): Promise<string[]> {
  const notes: string[] = [];
  for (const { list, payload } of LISTS) {
    for await (const raw of listSchools(client, list)) {
      const school = raw as { id?: unknown; name?: unknown; region?: { code?: unknown } };
      if (!isSafeId(school.id) || shardOf(school.id, o.shard.count) !== o.shard.index) continue;
      if (!(await holdsSchool(sink, school.id, school.region?.code))) continue;
      const reason = `listed by /schools/${list} (the webhook was not received; found by run ${o.runId})`;
      const base = {
        school_id: school.id,
        school_name: String(school.name ?? ''),
        school_la_code: '',
        school_urn: '',
        school_establishment_number: '',
      };
      const event: AccessRevokedEvent | AccessDeclinedEvent =
        payload === 'accessRevoked'
          ? { ...base, payload_type: payload, revoke_reason: reason }
          : { ...base, payload_type: payload, decline_reason: reason };
      const applied = await applyWebhookEvent(sink, event, { purgeOnRevoke: o.purge, now: () => o.now });
      const what = applied.purge ? 'its data was purged' : 'its data was kept (purge_on_revoke is off)';
      notes.push(`school ${school.id} is listed by /schools/${list}: treated as ${payload} (not exported; ${what})`);
    }
  }
  return notes;
}

/** Ids of the schools of this shard with state in this destination. */
export async function heldSchools(sink: Sink, shard: { index: number; count: number }): Promise<string[]> {
  return (await listStates(sink)).map((s) => s.schoolId).filter((id) => shardOf(id, shard.count) === shard.index);
}

/** Whether a school held here, and not already stopped by a directive, is missing from /schools. */
export async function holdsUnapproved(sink: Sink, held: string[], approved: ReadonlySet<string>): Promise<boolean> {
  for (const id of held) {
    if (approved.has(id)) continue;
    if (!(await readDirective(sink, id))?.deactivated) return true;
  }
  return false;
}

/** A school we still export: state here and no directive that already stopped it. */
async function holdsSchool(sink: Sink, id: string, region: unknown): Promise<boolean> {
  if (!isSafeRegion(region)) return false;
  if ((await readDirective(sink, id))?.deactivated) return false;
  return (await sink.read(statePath(region.toLowerCase(), id))) !== undefined;
}
