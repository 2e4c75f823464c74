import { rm } from 'node:fs/promises';
import type { Sink } from '../sink/types.ts';
import type { SchoolDirective } from '../manifest/types.ts';
import { readDirective, writeDirective } from '../manifest/state-store.ts';
import { eventId, isDuplicate, recordApplied, recordReceived, writeLastPointer } from './event-log.ts';
import type { SchoolEvent, WebhookEvent } from './events.ts';
import { KeyedLock } from './keyed-lock.ts';
import { purgeSchool, type PurgeResult } from './purge.ts';
import { readSchoolToken, tokenFilePath, writeSchoolToken } from './token-store.ts';

/**
 * What a validated event does to the destination, without HTTP: the receiver calls this, and so
 * can tests or a replay script. Order: event recorded ('received') → directive / token / purge →
 * per-school pointer → event marked 'applied'. A crash anywhere before the pointer makes the
 * redelivery apply again, and every action tolerates being applied twice.
 */
export interface ApplyOptions {
  tokenDir?: string;
  purgeOnRevoke?: boolean;
  now?: () => Date;
}

export interface ApplyResult {
  id: string;
  duplicate: boolean;
  actions: string[];
  directive?: SchoolDirective;
  purge?: PurgeResult;
  /** schoolApproved: the school a `--run` pipeline should export now */
  runSchool?: string;
}

const lock = new KeyedLock();

export async function applyWebhookEvent(sink: Sink, e: WebhookEvent, opts: ApplyOptions = {}): Promise<ApplyResult> {
  const id = eventId(e);
  const key = `${sink.url}|${e.payload_type === 'writeback' ? `writeback:${id}` : e.school_id}`;
  return lock.run(key, async () => {
    const now = (opts.now ?? (() => new Date()))();
    const at = now.toISOString();
    const tokenUnchanged =
      e.payload_type !== 'schoolApproved' ||
      e.school_token === undefined ||
      !opts.tokenDir ||
      (await readSchoolToken(opts.tokenDir, e.school_id)) === e.school_token;
    if (await isDuplicate(sink, e, tokenUnchanged)) return { id, duplicate: true, actions: [] };

    const rec = await recordReceived(sink, e, at);
    const result: ApplyResult = { id, duplicate: false, actions: [] };
    if (e.payload_type === 'writeback') {
      result.actions.push(`writeback ${e.status}`);
    } else {
      await applySchoolEvent(sink, e, id, now, opts, result);
      await writeLastPointer(sink, e.school_id, { event_id: id, payload_type: e.payload_type, applied_at: at });
    }
    await recordApplied(sink, rec, result.actions);
    return result;
  });
}

async function applySchoolEvent(sink: Sink, e: SchoolEvent, id: string, now: Date, opts: ApplyOptions, out: ApplyResult): Promise<void> {
  const at = now.toISOString();
  const d: SchoolDirective = (await readDirective(sink, e.school_id)) ?? {
    version: 1,
    school_id: e.school_id,
    force_full_seq: 0,
    deactivated: null,
    updated_at: at,
  };
  switch (e.payload_type) {
    case 'schoolApproved': {
      if (e.school_token !== undefined) {
        if (opts.tokenDir) {
          d.token_file = await writeSchoolToken(opts.tokenDir, e.school_id, e.school_token);
          out.actions.push('token kept');
        } else {
          out.actions.push('token not kept (no --token-dir)');
        }
      }
      if (d.deactivated) out.actions.push('reactivated');
      d.deactivated = null;
      d.force_full_seq += 1;
      out.actions.push(`full refresh requested (force_full_seq ${d.force_full_seq})`);
      out.runSchool = e.school_id;
      break;
    }
    case 'accessRevoked':
    case 'accessDeclined': {
      const reason = e.payload_type === 'accessRevoked' ? e.revoke_reason : e.decline_reason;
      // runs print `event` when they skip the school: the type, and enough of the id to find its record
      // `purge` tells a run already reading the school to keep nothing of it (see pipeline/task-commit.ts)
      d.deactivated = { reason, at, event: `${e.payload_type} ${id.slice(0, 12)}`, ...(opts.purgeOnRevoke ? { purge: true } : {}) };
      out.actions.push('deactivated');
      // the school's token no longer grants anything; a credential we cannot use is not kept.
      // Only our own file is removed, never a path read back from the (shared) destination.
      if (opts.tokenDir) await rm(tokenFilePath(opts.tokenDir, e.school_id), { force: true });
      if (d.token_file) {
        out.actions.push('token removed');
        delete d.token_file;
      }
      break;
    }
    case 'schoolMigration': {
      if (e.completed_at !== null) {
        d.force_full_seq += 1;
        out.actions.push(`migration completed: full refresh requested (force_full_seq ${d.force_full_seq})`);
      } else {
        out.actions.push('migration scheduled: recorded');
      }
      break;
    }
  }
  d.updated_at = at;
  // the directive is written before any purge, so no run starts on the school while files go
  await writeDirective(sink, d);
  out.directive = d;
  if ((e.payload_type === 'accessRevoked' || e.payload_type === 'accessDeclined') && opts.purgeOnRevoke) {
    out.purge = await purgeSchool(sink, e.school_id, `${e.payload_type}: ${d.deactivated!.reason}`, now);
    out.actions.push(`purged ${out.purge.removed.length} files (${out.purge.manifestPath})`);
  }
}
