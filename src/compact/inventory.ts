import { isSafeId, isSafeRegion } from '../ids.ts';
import { byRun, docsToRead, listDocs, readDoc, readHeader, type ManifestSource } from '../manifest/layout.ts';
import type { CompactionRecord, ManifestTask, PersonalDataRecord } from '../manifest/types.ts';

/**
 * What a destination holds, partition by partition, as `compact` needs it: every data file a
 * manifest lists, where each export file's rows are now (itself, or the latest compacted file
 * listing it), and which files are still there. Read from the manifests through the layout
 * module (src/manifest/layout.ts) and one listing of the data files; nothing is written here.
 */

/** One export file a task listed: the unit a compaction record names as a source. */
export interface Source {
  path: string;
  run_id: string;
  seq: number;
  rows: number;
}

/**
 * A file that holds current data: an export file no compaction replaced, or the latest
 * compacted file of its sources. What a compaction merges.
 */
/** What the manifests say of any file a compaction reads: where it belongs, its size and its policy. */
interface FileFacts {
  region: string;
  school_id: string;
  /** The resource of the tasks whose rows it holds (a compacted entry names one resource). */
  resource: string;
  bytes: number;
  sha256: string;
  /** NDJSON and CSV: its longest line, as its manifest entry records it (absent: not recorded). */
  maxLineBytes?: number;
  /** The personal-data policy its rows were written under (JSON text; '' when the manifest has none). */
  policy: string;
  personalData?: PersonalDataRecord;
}

export interface LiveFile extends FileFacts {
  path: string;
  table: string;
  /** Its rows, by the export file they were written to, in order. */
  sources: Source[];
  /** The newest run id among its sources: `--older-than` compares its time. */
  newestRun: string;
  /** A compacted file (made of earlier inputs) rather than an export file. */
  compacted: boolean;
}

export interface Inventory {
  /** Live files by partition key (see partitionKey). */
  partitions: Map<string, LiveFile[]>;
  /** Files still at the destination whose rows a durable compaction holds elsewhere (a crash before its deletions). */
  retired: string[];
  /** The destination's format, as the latest export run recorded it. */
  format?: string;
  formatOptions?: Record<string, unknown>;
}

interface CompactedFile extends FileFacts {
  path: string;
  runId: string;
  seq: number;
  record: CompactionRecord;
}

interface ExportFile extends Source, FileFacts {
  table: string;
}

/** The partition a file belongs to: table, region, school, and the resource its tasks read. */
export const partitionKey = (f: Pick<LiveFile, 'table' | 'region' | 'school_id' | 'resource'>): string =>
  `${f.table}/region=${f.region}/school_id=${f.school_id}#${f.resource}`;

/** The folder of a partition's files. */
export const partitionDir = (f: Pick<LiveFile, 'table' | 'region' | 'school_id'>): string =>
  `${f.table}/region=${f.region}/school_id=${f.school_id}`;

const later = (a: { runId: string; seq: number }, b: { runId: string; seq: number }): boolean =>
  a.runId !== b.runId ? a.runId > b.runId : a.seq > b.seq;

export interface InventoryFilter {
  schools?: ReadonlySet<string>;
  tables?: ReadonlySet<string>;
}

export async function readInventory(src: ManifestSource, filter: InventoryFilter = {}): Promise<Inventory> {
  const exports = new Map<string, ExportFile>();
  /** source path -> the latest compacted file listing it */
  const movedTo = new Map<string, CompactedFile>();
  const compactedFiles = new Map<string, CompactedFile>();
  const purgedAt = new Map<string, string>();
  const wanted = (school: unknown, table: unknown): boolean =>
    (!filter.schools || filter.schools.has(String(school))) && (!filter.tables || filter.tables.has(String(table)));
  let format: string | undefined;
  let formatOptions: Record<string, unknown> | undefined;

  for (const run of byRun(await listDocs(src))) {
    const header = run.manifest ? await readHeader(src, run.manifest) : undefined;
    if (header && (!('kind' in header) || header.kind !== 'compaction')) {
      format = header.format;
      formatOptions = header.format_options;
    }
    for (const doc of docsToRead(run, header)) {
      for await (const chunk of readDoc(src, doc)) {
        const personalData = chunk.header.personal_data;
        const policy = personalData ? JSON.stringify(personalData) : '';
        for (const p of chunk.purged) {
          const at = purgedAt.get(p.school_id);
          if (!at || at < run.runId) purgedAt.set(p.school_id, run.runId);
        }
        for (const t of chunk.tasks) {
          if (!isSafeId(t.school_id) || !isSafeRegion(t.region)) continue;
          const base = {
            region: t.region,
            school_id: t.school_id,
            resource: String(t.resource),
            policy,
            ...(personalData ? { personalData } : {}),
          };
          if (t.status === 'compacted') {
            const f = t.files?.[0];
            const rec = t.compaction;
            if (!f || !rec || !wanted(t.school_id, rec.table)) continue;
            const c: CompactedFile = {
              ...base,
              path: f.path,
              runId: run.runId,
              seq: seqOf(t),
              bytes: f.bytes,
              sha256: f.sha256,
              ...(f.max_line_bytes !== undefined ? { maxLineBytes: f.max_line_bytes } : {}),
              record: rec,
            };
            compactedFiles.set(c.path, c);
            for (const s of rec.sources) {
              const prev = movedTo.get(s.path);
              if (!prev || later(c, prev)) movedTo.set(s.path, c);
            }
            continue;
          }
          if (t.status !== 'committed') continue;
          for (const f of t.files ?? []) {
            if (!wanted(t.school_id, f.table)) continue;
            exports.set(f.path, {
              ...base,
              path: f.path,
              table: f.table,
              run_id: run.runId,
              seq: seqOf(t),
              rows: f.rows,
              bytes: f.bytes,
              sha256: f.sha256,
              ...(f.max_line_bytes !== undefined ? { maxLineBytes: f.max_line_bytes } : {}),
            });
          }
        }
      }
    }
  }

  const present = new Set((await src.list('')).filter((p) => !p.startsWith('_')));
  const partitions = new Map<string, LiveFile[]>();
  const live = new Map<string, LiveFile>();
  const retired = new Set<string>();
  for (const e of exports.values()) {
    const purged = purgedAt.get(e.school_id);
    if (purged && e.run_id < purged) continue; // its school was purged after: nothing of it is current
    const moved = movedTo.get(e.path);
    if (moved && present.has(moved.path)) {
      if (present.has(e.path)) retired.add(e.path);
      addLive(live, moved.path, () => compactedLive(moved));
      continue;
    }
    if (!present.has(e.path)) continue; // gone (a purge, or lost): loaders fail on it, not compaction
    addLive(live, e.path, () => ({
      path: e.path,
      table: e.table,
      region: e.region,
      school_id: e.school_id,
      resource: e.resource,
      bytes: e.bytes,
      sha256: e.sha256,
      ...(e.maxLineBytes !== undefined ? { maxLineBytes: e.maxLineBytes } : {}),
      sources: [{ path: e.path, run_id: e.run_id, seq: e.seq, rows: e.rows }],
      newestRun: e.run_id,
      policy: e.policy,
      ...(e.personalData ? { personalData: e.personalData } : {}),
      compacted: false,
    }));
  }
  // compacted files whose every source moved on to a later compaction: inputs a crash left behind
  for (const c of compactedFiles.values()) {
    if (!present.has(c.path) || live.has(c.path)) continue;
    const superseded = c.record.sources.every((s) => {
      const to = movedTo.get(s.path);
      return to !== undefined && to !== c && present.has(to.path);
    });
    if (superseded) retired.add(c.path);
  }
  for (const f of live.values()) {
    const key = partitionKey(f);
    partitions.set(key, [...(partitions.get(key) ?? []), f]);
  }
  for (const files of partitions.values())
    files.sort((a, b) => (a.newestRun < b.newestRun ? -1 : a.newestRun > b.newestRun ? 1 : a.path < b.path ? -1 : 1));
  return { partitions, retired: [...retired].sort(), ...(format ? { format } : {}), ...(formatOptions ? { formatOptions } : {}) };
}

function addLive(live: Map<string, LiveFile>, path: string, make: () => LiveFile): void {
  if (!live.has(path)) live.set(path, make());
}

function compactedLive(c: CompactedFile): LiveFile {
  const sources = c.record.sources.map((s) => ({ path: s.path, run_id: s.run_id, seq: s.seq ?? 0, rows: s.rows }));
  return {
    path: c.path,
    table: c.record.table,
    region: c.region,
    school_id: c.school_id,
    resource: c.resource,
    bytes: c.bytes,
    sha256: c.sha256,
    ...(c.maxLineBytes !== undefined ? { maxLineBytes: c.maxLineBytes } : {}),
    sources,
    newestRun: sources.reduce((m, s) => (s.run_id > m ? s.run_id : m), ''),
    policy: c.policy,
    ...(c.personalData ? { personalData: c.personalData } : {}),
    compacted: true,
  };
}

/** A compacted entry's identity carries a seq (its checkpoint.seq), as pieces of a read do. */
function seqOf(t: ManifestTask): number {
  return t.checkpoint?.seq ?? 0;
}
