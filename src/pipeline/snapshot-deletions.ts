import { gunzipSync, gzipSync } from 'node:zlib';
import { ExportError } from '../errors.ts';
import type { Sink } from '../sink/types.ts';
import type { Row } from '../table.ts';
import type { TaskPlan } from './task.ts';
import type { TaskOutput } from './task-output.ts';

/**
 * Tables the service keeps no deletion records for (the assessment tables) are compared with
 * their previous full snapshot: ids that were there and are gone become deletion rows with
 * detected_by = 'snapshot' and deleted_at = the time of detection (the real deletion happened
 * at some point since the previous snapshot). Id lists are written under run-specific names and
 * only referenced from state once the task commits, so a crash never loses a detection. A read
 * committed at checkpoints keeps the ids of each piece in a chunk file until it completes.
 */
function idsDir(plan: TaskPlan): string {
  return `_state/ids/region=${plan.school.region}/school_id=${plan.school.id}`;
}

/** The ids a list holds, or undefined when it is missing. */
async function readIds(sink: Sink, path: string): Promise<string[] | undefined> {
  const buf = await sink.read(path);
  if (!buf) return undefined;
  try {
    return JSON.parse(gunzipSync(buf).toString('utf8')) as string[];
  } catch (e) {
    throw new ExportError('E_STATE', `snapshot id list ${path} is unreadable (${(e as Error).message}): delete it to start a new baseline`);
  }
}

async function writeIds(sink: Sink, path: string, ids: Iterable<string>): Promise<void> {
  await sink.writeAtomic(path, gzipSync(JSON.stringify([...ids])));
}

/** The ids of one checkpoint piece, kept until the read completes. */
export async function writeKeyChunk(sink: Sink, plan: TaskPlan, snapshot: string, seq: number, keys: Set<string>): Promise<string> {
  const path = `${idsDir(plan)}/${plan.spec.name}-${snapshot}-part${String(seq).padStart(4, '0')}.json.gz`;
  await writeIds(sink, path, keys);
  return path;
}

/**
 * At the end of a full read: rows for ids the previous snapshot had and this one lacks go to the
 * deletions table, and this snapshot's ids become the next baseline (returned; referenced from
 * state only once the task commits).
 */
export async function finishSnapshot(o: {
  sink: Sink;
  plan: TaskPlan;
  output: TaskOutput;
  chunks: string[];
  detectedAt: Date;
  runId: string;
}): Promise<{ idsFile: string | undefined; warning?: string }> {
  const seen = new Set(o.output.keys);
  for (const chunk of o.chunks) {
    // A lost piece of this snapshot's ids would report its rows as deleted: detect nothing this
    // time and keep the previous baseline, so the next complete snapshot compares against it.
    const ids = await readIds(o.sink, chunk);
    if (!ids)
      return {
        idsFile: undefined,
        warning: `snapshot id list ${chunk} is missing: deletions in ${o.plan.spec.name} were not detected this time`,
      };
    for (const id of ids) seen.add(id);
  }
  if (o.plan.knownIdsFile) {
    const gone = ((await readIds(o.sink, o.plan.knownIdsFile)) ?? []).filter((id) => !seen.has(id));
    await o.output.writeRows('deletions', deletionRows(gone, o.plan.spec.name, o.detectedAt, o.output.metaContext));
  }
  const idsFile = `${idsDir(o.plan)}/${o.plan.spec.name}-${o.runId}.json.gz`;
  await writeIds(o.sink, idsFile, seen);
  return { idsFile };
}

function deletionRows(ids: string[], table: string, at: Date, ctx: TaskOutput['metaContext']): Row[] {
  const deletedAt = at.toISOString().replace('Z', '000Z');
  return ids.map((id) => ({
    type: table,
    id,
    mis_id: null,
    deleted_at: deletedAt,
    deleted_at__timezone: 'UTC',
    restored_at: null,
    restored_at__timezone: null,
    detected_by: 'snapshot',
    table,
    _school_id: ctx.schoolId,
    _region: ctx.region,
    _run_id: ctx.runId,
    _extracted_at: ctx.extractedAt,
  }));
}
