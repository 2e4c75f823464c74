import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { ExportError, oneLine } from '../errors.ts';
import type { FormatName } from '../format/index.ts';
import { packParts, partPath, PART_LIMIT, runManifestPath, runManifestText, runTotals, type PackItem } from '../manifest/layout.ts';
import type { Manifest, ManifestTask, PersonalDataRecord, RunManifest, RunTotals } from '../manifest/types.ts';
import type { Sink } from '../sink/types.ts';
import { localFiles, type LocalFiles } from '../warehouse/fetch-file.ts';
import { partitionDir, readInventory, type LiveFile } from './inventory.ts';
import { kindOf, mergeFiles, shapeOf, type FileKind } from './merge.ts';

/**
 * The compaction protocol (docs/compaction.md). Under the destination's lease, for each
 * partition (table, region, school, and the resource whose tasks wrote it) with more than one
 * small live file:
 *
 *   1. the merged file is written at a new name (`<compaction run id>-<n>.<ext>`), atomically;
 *   2. a manifest part lists it as a 'compacted' entry whose CompactionRecord names the export
 *      files whose rows it holds (sources) and the files it replaces (inputs);
 *   3. only once that part is durable are the inputs removed.
 *
 * The run manifest (kind 'compaction') is written last. A crash (or any error: this code never
 * cleans up after itself, so an error and a crash leave the same) before 2 leaves an unlisted
 * file, which loaders never read and the next run or compaction sweeps (the run marker says a
 * compaction was going on); after 2 the inputs are still there but retired, and the next
 * compaction removes them. Loaders read a pending task's file from the latest compacted file
 * listing it, so a warehouse behind by any number of runs still loads exactly.
 */

export type CompactStep = 'file-written' | 'manifest-written' | 'inputs-removed';

export interface CompactOptions {
  sink: Sink;
  runId: string;
  startedAt: Date;
  /** Only files whose newest rows come from runs older than this many days. */
  olderThanDays?: number;
  schools?: ReadonlySet<string>;
  tables?: ReadonlySet<string>;
  /** Files at least this big are left as they are (default 64 MiB). */
  smallFileBytes?: number;
  /** A merge takes input files up to about this many bytes in all (default 256 MiB, `run`'s --max-file-bytes). */
  targetFileBytes?: number;
  /** Compacted files listed per batch of manifest parts (their inputs are removed batch by batch). */
  batchFiles?: number;
  partLimit?: number;
  onProgress?: (e: CompactEvent) => void;
  /** Tests: called after each step of the protocol; throwing there stops the compaction as a crash would. */
  step?: (step: CompactStep, detail: { paths: string[] }) => Promise<void> | void;
}

export type CompactEvent =
  | { event: 'compact_start'; run_id: string; schools: number; partitions: number; retired: number }
  | { event: 'compact_school'; school_id: string; done: number; schools: number; files: number; into: number }
  | { event: 'compact_skipped'; path: string; reason: string };

export interface CompactResult {
  runId: string;
  /** Partitions that got a compacted file. */
  partitions: number;
  schools: number;
  filesMerged: number;
  filesWritten: number;
  bytesBefore: number;
  bytesAfter: number;
  /** Inputs of an earlier compaction that a crash left behind, removed now. */
  leftoversRemoved: number;
  /** Files left as they were and why (a checksum that does not match, a file gone, a shape not merged). */
  skipped: { path: string; reason: string }[];
  /** Files that could not be compacted because they look damaged: the run is not clean. */
  problems: number;
}

const MiB = 1024 * 1024;
const DAY_MS = 24 * 3600_000;

/** A checked local copy of an input (the file itself on a local destination). */
type Held = Awaited<ReturnType<LocalFiles['get']>>;

interface Merge {
  files: LiveFile[];
  kind: FileKind;
}

export async function compact(o: CompactOptions): Promise<CompactResult> {
  const inv = await readInventory(o.sink, { ...(o.schools ? { schools: o.schools } : {}), ...(o.tables ? { tables: o.tables } : {}) });
  const small = o.smallFileBytes ?? 64 * MiB;
  const cutoff = o.olderThanDays === undefined ? undefined : o.startedAt.getTime() - o.olderThanDays * DAY_MS;
  const eligible = (f: LiveFile): boolean => {
    if (f.bytes >= small) return false;
    if (cutoff === undefined) return true;
    const t = runTime(f.newestRun);
    return t !== undefined && t < cutoff;
  };
  // per school, the groups of a partition that could merge: same kind of file, same personal-data policy
  const bySchool = new Map<string, LiveFile[][]>();
  let partitionsWithWork = 0;
  for (const files of [...inv.partitions.values()]) {
    const groups = new Map<string, LiveFile[]>();
    for (const f of files.filter(eligible)) {
      const kind = kindOf(f.path);
      if (!kind) continue;
      const key = `${kind}|${f.policy}`;
      groups.set(key, [...(groups.get(key) ?? []), f]);
    }
    const ready = [...groups.values()].filter((g) => g.length > 1);
    if (!ready.length) continue;
    partitionsWithWork++;
    const school = ready[0]![0]!.school_id;
    bySchool.set(school, [...(bySchool.get(school) ?? []), ...ready]);
  }
  const schools = [...bySchool.keys()].sort();
  o.onProgress?.({
    event: 'compact_start',
    run_id: o.runId,
    schools: schools.length,
    partitions: partitionsWithWork,
    retired: inv.retired.length,
  });

  const writer = new CompactionWriter(o, inv.format, inv.formatOptions);
  const files = localFiles(o.sink, { verify: true });
  const duck = lazyDuckDb();
  const result: CompactResult = {
    runId: o.runId,
    partitions: 0,
    schools: 0,
    filesMerged: 0,
    filesWritten: 0,
    bytesBefore: 0,
    bytesAfter: 0,
    leftoversRemoved: 0,
    skipped: [],
    problems: 0,
  };
  const skip = (path: string, reason: string, problem: boolean): void => {
    result.skipped.push({ path, reason });
    if (problem) result.problems++;
    o.onProgress?.({ event: 'compact_skipped', path, reason });
  };
  try {
    for (const [i, school] of schools.entries()) {
      let merged = 0;
      let written = 0;
      const partitions = new Set<string>();
      for (const group of bySchool.get(school)!) {
        // each input is fetched (an S3 copy) and checked once, for its shape and its merge
        const held = new Map<string, Held>();
        try {
          for (const m of await planMerges(group, files, held, duck.conn, skip, o.targetFileBytes ?? 256 * MiB)) {
            const entry = await writeMerge(o, m, held, duck.conn, writer.nextSeq(), skip);
            if (!entry) continue;
            await writer.add(entry, m.files[0]!.personalData);
            merged += m.files.length;
            written++;
            partitions.add(partitionDir(m.files[0]!));
            result.bytesBefore += m.files.reduce((n, f) => n + f.bytes, 0);
            result.bytesAfter += entry.files[0]!.bytes;
          }
        } finally {
          await Promise.all([...held.values()].map((h) => h.release()));
        }
      }
      if (written) result.schools++;
      result.partitions += partitions.size;
      result.filesMerged += merged;
      result.filesWritten += written;
      o.onProgress?.({ event: 'compact_school', school_id: school, done: i + 1, schools: schools.length, files: merged, into: written });
    }
    await writer.flush();
    await writer.finish(result.problems > 0 ? 'partial' : 'ok');
    // inputs an earlier compaction retired but did not get to remove (a crash after its manifest)
    if (inv.retired.length) {
      await o.sink.remove(inv.retired);
      result.leftoversRemoved = inv.retired.length;
    }
  } finally {
    await files.close();
    await duck.close();
  }
  return result;
}

/**
 * The merges of one group of files: split by shape (CSV header, Parquet columns), then into
 * runs of consecutive files of about `target` bytes. Inputs are fetched (and their checksums
 * checked) here; a file that fails is left as it is.
 */
async function planMerges(
  group: LiveFile[],
  files: LocalFiles,
  held: Map<string, Held>,
  conn: () => Promise<DuckDBConnection>,
  skip: (path: string, reason: string, problem: boolean) => void,
  target: number,
): Promise<Merge[]> {
  const kind = kindOf(group[0]!.path)!;
  const shapes = new Map<string, LiveFile[]>();
  for (const f of group) {
    let shape: string | undefined;
    const local = await files.get(f).catch((e: unknown) => {
      skip(f.path, oneLine(e), true);
      return undefined;
    });
    if (!local) continue;
    held.set(f.path, local);
    try {
      shape = await shapeOf(local.path, kind, conn);
    } catch (e) {
      skip(f.path, `cannot be read: ${oneLine(e)}`, true);
      continue;
    }
    if (shape === undefined) {
      skip(f.path, 'a column type the writers do not write: left as it is', false);
      continue;
    }
    shapes.set(shape, [...(shapes.get(shape) ?? []), f]);
  }
  const out: Merge[] = [];
  for (const same of shapes.values()) {
    let run: LiveFile[] = [];
    let bytes = 0;
    const close = (): void => {
      if (run.length > 1) out.push({ files: run, kind });
      run = [];
      bytes = 0;
    };
    for (const f of same) {
      if (run.length && bytes + f.bytes > target) close();
      run.push(f);
      bytes += f.bytes;
    }
    close();
  }
  return out;
}

/** Writes one merged file (step 1). Returns its manifest entry, or undefined when it was left undone. */
async function writeMerge(
  o: CompactOptions,
  m: Merge,
  held: ReadonlyMap<string, Held>,
  conn: () => Promise<DuckDBConnection>,
  seq: number,
  skip: (path: string, reason: string, problem: boolean) => void,
): Promise<ManifestTask | undefined> {
  const first = m.files[0]!;
  const path = `${partitionDir(first)}/${o.runId}-${String(seq).padStart(4, '0')}.${m.kind}`;
  const sources = m.files.flatMap((f) => f.sources);
  const rows = sources.reduce((n, s) => n + s.rows, 0);
  const locals = m.files.map((f) => held.get(f.path)!);
  const out = await o.sink.openFile(path);
  try {
    const counted = await mergeFiles(
      m.kind,
      locals.map((l) => l.path),
      out.stream,
      conn,
    );
    if (counted !== undefined && counted !== rows) {
      throw new ExportError(
        'E_STATE',
        `${partitionDir(first)}: the files hold ${counted} rows, their manifests list ${rows}: left as they are`,
      );
    }
    const { bytes, sha256 } = await out.commit();
    await o.step?.('file-written', { paths: [path] });
    return {
      school_id: first.school_id,
      region: first.region,
      resource: first.resource,
      status: 'compacted',
      mode: 'incremental',
      files: [{ table: first.table, path, rows, bytes, sha256, ...longestLine(m.files) }],
      rows: { [first.table]: rows },
      // the entry's identity (run, school, resource, seq): one compaction has several per school and resource
      checkpoint: { snapshot: o.runId, seq, final: true },
      compaction: { table: first.table, sources, inputs: m.files.map((f) => f.path) },
    };
  } catch (e) {
    await out.abort();
    if (e instanceof ExportError && (e.code === 'E_STATE' || e.code === 'E_DATA')) {
      skip(first.path, e.message, true);
      return undefined;
    }
    throw e;
  }
}

/**
 * The compaction's manifest through the layout module: entries packed into bounded parts (one
 * personal-data policy per part, so a part's header describes every row its files hold), a
 * batch at a time; each batch's inputs removed once its parts are durable; the run manifest last.
 */
class CompactionWriter {
  private batch: { task: ManifestTask; personalData?: PersonalDataRecord }[] = [];
  private part = 0;
  private readonly parts: RunManifest['parts'] = [];
  private totals: RunTotals = runTotals([], 0);
  private seq = 0;

  constructor(
    private readonly o: CompactOptions,
    private readonly format: string | undefined,
    private readonly formatOptions: Record<string, unknown> | undefined,
  ) {}

  /** A compacted entry's seq: unique in the run (it names the file within its folder, too). */
  nextSeq(): number {
    return ++this.seq;
  }

  async add(task: ManifestTask, personalData: PersonalDataRecord | undefined): Promise<void> {
    this.batch.push({ task, ...(personalData ? { personalData } : {}) });
    if (this.batch.length >= (this.o.batchFiles ?? 500)) await this.flush();
  }

  /** Steps 2 and 3 for the batch: its parts, then the removal of its inputs. */
  async flush(): Promise<void> {
    if (!this.batch.length) return;
    const batch = this.batch;
    this.batch = [];
    const byPolicy = new Map<string, { personalData?: PersonalDataRecord; tasks: ManifestTask[] }>();
    for (const b of batch) {
      const key = b.personalData ? JSON.stringify(b.personalData) : '';
      const g = byPolicy.get(key) ?? { ...(b.personalData ? { personalData: b.personalData } : {}), tasks: [] };
      g.tasks.push(b.task);
      byPolicy.set(key, g);
    }
    const written: string[] = [];
    for (const g of byPolicy.values()) {
      const header = (n: number): object => ({
        ...this.header(),
        status: 'running',
        part: n,
        finished_at: new Date().toISOString(),
        ...(g.personalData ? { personal_data: g.personalData } : {}),
      });
      const items: PackItem<null>[] = g.tasks.map((t) => ({ kind: 'task', value: t, owner: null }));
      for (const p of packParts(header, this.part + 1, items, this.o.partLimit ?? PART_LIMIT)) {
        const n = this.part + 1;
        const path = partPath(this.o.runId, n);
        await this.o.sink.writeAtomic(path, p.text);
        this.part = n;
        this.parts.push({ path, part: n, tasks: p.tasks, bytes: Buffer.byteLength(p.text) });
        written.push(path);
      }
    }
    this.totals = addTotals(
      this.totals,
      runTotals(
        batch.map((b) => b.task),
        0,
      ),
    );
    await this.o.step?.('manifest-written', { paths: written });
    const inputs = batch.flatMap((b) => b.task.compaction!.inputs);
    await this.o.sink.remove(inputs);
    await this.o.step?.('inputs-removed', { paths: inputs });
  }

  private header(): Omit<Manifest, 'tasks' | 'deletions' | 'status' | 'finished_at'> {
    return {
      version: 1,
      run_id: this.o.runId,
      started_at: this.o.startedAt.toISOString(),
      format: (this.format ?? 'parquet') as FormatName,
      ...(this.formatOptions ? { format_options: this.formatOptions } : {}),
    };
  }

  /** The run manifest, once every part is durable (nothing to write when nothing was compacted). */
  async finish(status: RunManifest['status']): Promise<void> {
    if (!this.parts.length) return;
    const { version: _v, ...rest } = this.header();
    const run: RunManifest = {
      version: 2,
      layout: 'parts',
      kind: 'compaction',
      ...rest,
      status,
      finished_at: new Date().toISOString(),
      summary: this.totals,
      parts: this.parts,
    };
    await this.o.sink.writeAtomic(runManifestPath(this.o.runId), runManifestText(run));
  }
}

function addTotals(a: RunTotals, b: RunTotals): RunTotals {
  const tasks = { ...a.tasks };
  for (const [k, v] of Object.entries(b.tasks))
    tasks[k as keyof RunTotals['tasks']] = (tasks[k as keyof RunTotals['tasks']] ?? 0) + (v ?? 0);
  const rows = { ...a.rows };
  for (const [k, v] of Object.entries(b.rows)) rows[k] = (rows[k] ?? 0) + v;
  return {
    tasks,
    rows,
    files: a.files + b.files,
    bytes: a.bytes + b.bytes,
    deletions: a.deletions + b.deletions,
    failures: [...a.failures, ...b.failures].slice(0, 100),
    failures_total: a.failures_total + b.failures_total,
  };
}

/** A run id's start time ('20261122T011558.123Z-…'), or undefined when it has none. */
export function runTime(runId: string): number | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(\.\d{3})?Z/.exec(runId);
  if (!m) return undefined;
  const t = Date.parse(`${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}${m[7] ?? ''}Z`);
  return Number.isNaN(t) ? undefined : t;
}

/** DuckDB reads Parquet; it is loaded only when a Parquet file is compacted. */
function lazyDuckDb(): { conn: () => Promise<DuckDBConnection>; close: () => Promise<void> } {
  let instance: DuckDBInstance | undefined;
  let conn: Promise<DuckDBConnection> | undefined;
  return {
    conn: () =>
      (conn ??= (async () => {
        const { DuckDBInstance } = await import('@duckdb/node-api');
        instance = await DuckDBInstance.create(':memory:', { threads: '1' });
        const c = await instance.connect();
        await c.run("SET memory_limit = '256MB'");
        return c;
      })()),
    close: async () => {
      const c = await conn?.catch(() => undefined);
      c?.closeSync();
      instance?.closeSync();
    },
  };
}

/** A merged text file's longest line is its inputs' longest (a CSV header included): known only when every input's is. */
function longestLine(files: readonly LiveFile[]): { max_line_bytes?: number } {
  const lines = files.map((f) => f.maxLineBytes);
  return lines.every((n): n is number => n !== undefined) ? { max_line_bytes: Math.max(...lines) } : {};
}
