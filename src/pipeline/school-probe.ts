import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { ApiError, ExportError } from '../errors.ts';
import type { ResourceSpec } from '../resources/index.ts';
import type { ApiClient } from '../source/client.ts';
import type { SchoolRef } from './task-output.ts';

/** What one request per school tells the plan before any of its tasks runs. */
export interface SchoolProbe {
  /** 423 after the retry budget: the school is inactive; its tasks are skipped this run. */
  inactive?: ExportError;
  /** "table.column" values that will be null for lack of scope (decided by ScopeKnowledge once every school's list is read). */
  masked: string[];
  /** The permissions response, reused by the school_permissions task (no second request). */
  permissions?: { body: unknown; serverDate?: Date };
}

export const PERMISSIONS_PATH = '/meta/schools/{school_id}/permissions';

/**
 * Reads the school's applied permissions: an inactive school answers 423 here once, instead of
 * each of its tasks spending the retry budget; the permissions say which properties read as null.
 */
export async function probeSchool(client: ApiClient, school: SchoolRef, _resources: readonly ResourceSpec[]): Promise<SchoolProbe> {
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
  return { masked: [], permissions: res };
}

/**
 * A probe's permissions response, kept for the school_permissions task that writes it: every
 * school's is held until its task starts (at 10,000 schools, the start of the run). As JSON text
 * it was 6.2 MB of the heap at 2,000 schools; deflated, a tenth of that, for 30 us a school (10 us
 * to inflate). Kept as a latin1 string: a Buffer would hold zlib's 16 KB output chunk, and a copy
 * would pin an 8 KB slab of Node's buffer pool (16 MB of external memory at 2,000 schools, measured).
 */
export interface KeptResponse {
  deflated: string;
  serverDate: Date | undefined;
}

export function keepResponse(res: { body: unknown; serverDate?: Date }): KeptResponse {
  return { deflated: deflateRawSync(JSON.stringify(res.body), { level: 1 }).toString('latin1'), serverDate: res.serverDate };
}

export function openResponse(kept: KeptResponse): { body: unknown; serverDate: Date | undefined } {
  return { body: JSON.parse(inflateRawSync(Buffer.from(kept.deflated, 'latin1')).toString()) as unknown, serverDate: kept.serverDate };
}
