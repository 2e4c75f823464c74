import type { ApiClient, PageBatch } from '../source/client.ts';
import type { ResourceSpec } from '../resources/types.ts';
import { resourceByName, tableSchemas } from '../resources/index.ts';
import { compileFlattener } from '../flatten/index.ts';
import type { Format, FormatOptions } from '../format/types.ts';
import type { Sink } from '../sink/types.ts';
import type { Manifest, ManifestFile, ManifestTask } from '../manifest/types.ts';
import type { Row, TableSchema } from '../table.ts';
import { TableFiles } from './table-files.ts';
import { updatedAfterParam } from './watermark.ts';
import { detectSnapshotDeletions } from './snapshot-deletions.ts';
import type { PersonalData } from '../privacy/personal-data.ts';

export interface SchoolRef {
  id: string;
  region: string;
  domain?: string;
  record: unknown; // the school object from discovery
}

export interface TaskPlan {
  school: SchoolRef;
  spec: ResourceSpec;
  mode: 'full' | 'incremental';
  previousWatermark: string | null;
  knownIdsFile?: string; // previous snapshot's ids (tables without deletion records)
}

export interface TaskEnv {
  client: ApiClient;
  sink: Sink;
  format: Format;
  formatOptions: FormatOptions;
  runId: string;
  extractedAt: string;
  perPage: number;
  lookbackSeconds: number;
  limits: { maxRows: number; maxBytes: number };
  nextSeq: (dir: string) => number;
  onProgress?: (p: { rows: number; pages: number; bytes: number }) => void;
  signal?: AbortSignal;
  /** The run's personal-data policy: applied to every table's rows after flattening, before writing. */
  personalData?: PersonalData;
}

export interface TaskOutcome {
  task: ManifestTask;
  deletions: Manifest['deletions'];
  taskStart: Date; // server clock when the first page was answered: the next watermark
  snapshotIdsFile?: string; // written for the next snapshot comparison
}

const DELETIONS_SCHEMA: TableSchema = tableSchemas(resourceByName('deletions')!)[0]!;

/** Reads one resource of one school and writes its tables' files. Files are committed on return. */
export async function runTask(plan: TaskPlan, env: TaskEnv): Promise<TaskOutcome> {
  const { school, spec } = plan;
  const flattener = compileFlattener(spec);
  const schemas = new Map<string, TableSchema>(flattener.tables.map((t) => [t.name, t]));
  // Snapshot-detected deletions of this resource go to the deletions table.
  if (!schemas.has('deletions')) schemas.set('deletions', DELETIONS_SCHEMA);
  const writers = new Map<string, TableFiles>();
  const writerFor = (table: string): TableFiles => {
    let w = writers.get(table);
    if (!w) {
      const schema = schemas.get(table);
      if (!schema) throw new Error(`flattener produced rows for undeclared table ${table}`);
      const dir = `${table}/region=${school.region}/school_id=${school.id}`;
      w = new TableFiles(env.sink, env.format, env.formatOptions, schema, dir, env.runId, env.nextSeq, env.limits);
      writers.set(table, w);
    }
    return w;
  };
  const ctx = { schoolId: school.id, region: school.region, runId: env.runId, extractedAt: env.extractedAt };
  const query: Record<string, string | number | boolean | undefined> = { ...(spec.query ?? {}) };
  let updatedAfter: string | undefined;
  if (plan.mode === 'incremental' && plan.previousWatermark && spec.incremental) {
    updatedAfter = updatedAfterParam(plan.previousWatermark, env.lookbackSeconds);
    query.updated_after = updatedAfter;
  }
  const path = spec.path.replace('{school_id}', school.id);
  const reqCtx = { school: school.id, endpoint: spec.path };
  const localStart = new Date();
  let taskStart: Date | undefined;
  const deletions: Manifest['deletions'] = [];
  const seenIds =
    plan.mode === 'full' && spec.incremental && !spec.deletionType && spec.key.length === 1 && spec.scope === 'school'
      ? new Set<string>()
      : undefined;
  let rows = 0;
  let pages = 0;
  let bytes = 0;

  const writeRecords = async (records: unknown[]) => {
    const out = flattener.flattenBatch(records, ctx);
    for (const [table, tableRows] of out) {
      if (tableRows.length) env.personalData?.transformFor(schemas.get(table)!)?.(tableRows);
      if (tableRows.length) await writerFor(table).write(tableRows);
      if (table === 'deletions') collectDeletions(tableRows, school.id, deletions);
    }
    // The id list holds the ids as written (pseudonymised when the policy says so), so the next
    // snapshot compares like with like and its deletion rows name rows that exist in the files.
    if (seenIds) for (const r of out.get(spec.name)!) seenIds.add(String(r[spec.key[0]!]));
    rows += records.length;
  };

  try {
    if (spec.scope === 'discovery') {
      taskStart = env.client.serverNow() ?? localStart;
      await writeRecords([school.record]);
    } else if (spec.shape === 'object' || !spec.paginated) {
      const { body, serverDate } = await env.client.getJson<{ data: unknown }>(path, { domain: school.domain, query, ctx: reqCtx });
      taskStart = serverDate ?? localStart;
      const data = body?.data;
      await writeRecords(spec.shape === 'object' ? [data] : Array.isArray(data) ? data : []);
      pages = 1;
    } else {
      const it = env.client.paginate(path, {
        domain: school.domain,
        query,
        mode: 'cursor',
        perPage: env.perPage,
        include: spec.children?.map((c) => c.include),
        ctx: reqCtx,
      });
      for await (const batch of it as AsyncGenerator<PageBatch>) {
        env.signal?.throwIfAborted();
        if (!taskStart) taskStart = batch.serverDate ?? localStart;
        await writeRecords(batch.rows);
        if (batch.last) {
          pages += 1;
          bytes += batch.bytes;
        }
        env.onProgress?.({ rows, pages, bytes });
      }
    }
    taskStart ??= localStart;

    let snapshotIdsFile: string | undefined;
    if (seenIds) {
      const detected = await detectSnapshotDeletions({
        sink: env.sink,
        previousIdsFile: plan.knownIdsFile,
        seen: seenIds,
        table: spec.name,
        detectedAt: taskStart,
        ctx,
        runId: env.runId,
      });
      snapshotIdsFile = detected.idsFile;
      if (detected.rows.length) {
        await writerFor('deletions').write(detected.rows);
        collectDeletions(detected.rows, school.id, deletions);
      }
    }

    const files: ManifestFile[] = [];
    for (const w of writers.values()) files.push(...(await w.finish()));
    const rowCounts: Record<string, number> = {};
    for (const [t, w] of writers) rowCounts[t] = w.rows;
    const drift: Record<string, string[]> = {};
    for (const [t, fields] of flattener.drift()) if (fields.size) drift[t] = [...fields].sort();
    return {
      task: {
        school_id: school.id,
        region: school.region,
        resource: spec.name,
        status: 'committed',
        mode: updatedAfter ? 'incremental' : 'full',
        ...(updatedAfter ? { updated_after: updatedAfter } : {}),
        files,
        rows: rowCounts,
        ...(Object.keys(drift).length ? { drift_fields: drift } : {}),
      },
      deletions,
      taskStart,
      snapshotIdsFile,
    };
  } catch (e) {
    await Promise.allSettled([...writers.values()].map((w) => w.abort()));
    throw e;
  }
}

/** Deletions also go into the run manifest, so a reader can act on them without the files. */
function collectDeletions(rows: Row[], schoolId: string, out: Manifest['deletions']): void {
  for (const r of rows) {
    out.push({
      school_id: schoolId,
      type: String(r.type),
      id: String(r.id),
      deleted_at: (r.deleted_at as string | null) ?? null,
      restored_at: (r.restored_at as string | null) ?? null,
      detected_by: r.detected_by === 'snapshot' ? 'snapshot' : 'api',
    });
  }
}
