import { gunzipSync, gzipSync } from 'node:zlib';
import type { Sink } from '../sink/types.ts';
import type { Row } from '../table.ts';
import { ExportError } from '../errors.ts';

/**
 * Tables the service keeps no deletion records for (the assessment tables) are compared with
 * their previous full snapshot: ids that were there and are gone become deletion rows with
 * detected_by = 'snapshot' and deleted_at = the time of detection (the real deletion happened
 * at some point since the previous snapshot). The id list is written under a run-specific name
 * and only referenced from state once the task commits, so a crash never loses a detection.
 */
export async function detectSnapshotDeletions(o: {
  sink: Sink;
  previousIdsFile: string | undefined;
  seen: Set<string>;
  table: string;
  detectedAt: Date;
  ctx: { schoolId: string; region: string; runId: string; extractedAt: string };
  runId: string;
}): Promise<{ rows: Row[]; idsFile: string }> {
  const rows: Row[] = [];
  if (o.previousIdsFile) {
    const buf = await o.sink.read(o.previousIdsFile);
    if (buf) {
      let previous: string[];
      try {
        previous = JSON.parse(gunzipSync(buf).toString('utf8')) as string[];
      } catch (e) {
        throw new ExportError(
          'E_STATE',
          `snapshot id list ${o.previousIdsFile} is unreadable (${(e as Error).message}): delete it to start a new baseline`,
        );
      }
      const at = o.detectedAt.toISOString().replace('Z', '000Z');
      for (const id of previous) {
        if (o.seen.has(id)) continue;
        rows.push({
          type: o.table,
          id,
          mis_id: null,
          deleted_at: at,
          deleted_at__timezone: 'UTC',
          restored_at: null,
          restored_at__timezone: null,
          detected_by: 'snapshot',
          table: o.table,
          _school_id: o.ctx.schoolId,
          _region: o.ctx.region,
          _run_id: o.ctx.runId,
          _extracted_at: o.ctx.extractedAt,
        });
      }
    }
  }
  const idsFile = `_state/ids/region=${o.ctx.region}/school_id=${o.ctx.schoolId}/${o.table}-${o.runId}.json.gz`;
  await o.sink.writeAtomic(idsFile, gzipSync(JSON.stringify([...o.seen])));
  return { rows, idsFile };
}
