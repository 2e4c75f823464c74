import type { Readable } from 'node:stream';
import { ExportError } from '../errors.ts';
import { scanDocument } from './layout-stream.ts';
import type { Manifest, ManifestTask, RunManifest, RunTotals } from './types.ts';

/**
 * The manifest layout, the one place that knows it (docs/manifest.md):
 *
 *   _manifests/<run_id>/part-<n>.json   bounded parts (at most PART_LIMIT bytes, one line of JSON
 *                                       each): a version 1 Manifest with status 'running' holding
 *                                       some of the run's task entries and deletions
 *   _manifests/<run_id>.json            the run, written last: a version 2 RunManifest (summary and
 *                                       the list of its parts). Earlier versions wrote here a
 *                                       version 1 Manifest repeating every task, and removed the
 *                                       parts; such destinations are read as they are.
 *
 * Writers (the committer, `compact`) pack entries with packParts and finish with
 * runManifestText; readers (loaders, status, the sweep of killed runs) list documents with
 * listDocs / byRun and read entries with readDoc / runTasks, which stream: memory holds one part
 * (or one batch of an old run manifest's tasks), never a run.
 */

export const MANIFEST_DIR = '_manifests/';
/** No manifest object is larger (1 MB): BigQuery reads each as one CSV row, Snowflake as one VARIANT. */
export const PART_LIMIT = 1_000_000;
/** Documents above this size (old run manifests) are streamed instead of parsed whole. */
const STREAM_ABOVE = 4 * PART_LIMIT;
export const RUN_ID = /^[0-9A-Za-z][0-9A-Za-z_.-]{0,127}$/;

export const runManifestPath = (runId: string): string => `${MANIFEST_DIR}${runId}.json`;
export const partPath = (runId: string, n: number): string => `${MANIFEST_DIR}${runId}/part-${String(n).padStart(5, '0')}.json`;

/** What readers need of a destination (a Sink fits; so does the loaders' WarehouseSource). */
export interface ManifestSource {
  read(relPath: string): Promise<Buffer | undefined>;
  list(prefix: string): Promise<string[]>;
  /** When present, large documents are streamed instead of read whole. */
  readStream?(relPath: string): Promise<Readable | undefined>;
}

/** One manifest document: a run manifest (`kind: 'run'`, part 0) or a part of a run. */
export interface ManifestDoc {
  path: string;
  runId: string;
  kind: 'run' | 'part';
  part: number;
}

export function docOf(path: string): ManifestDoc | undefined {
  if (!path.startsWith(MANIFEST_DIR)) return undefined;
  const rel = path.slice(MANIFEST_DIR.length);
  const run = /^([^/]+)\.json$/.exec(rel);
  const part = /^([^/]+)\/part-(\d+)\.json$/.exec(rel);
  const runId = run?.[1] ?? part?.[1];
  if (!runId || !RUN_ID.test(runId)) return undefined;
  return { path, runId, kind: run ? 'run' : 'part', part: part ? Number(part[2]) : 0 };
}

/** Run order: by run id; within a run its parts by number, then its run manifest. */
export function compareDocs(a: ManifestDoc, b: ManifestDoc): number {
  if (a.runId !== b.runId) return a.runId < b.runId ? -1 : 1;
  if (a.kind !== b.kind) return a.kind === 'part' ? -1 : 1;
  return a.part - b.part;
}

/** Every manifest document of the destination, in run order. */
export async function listDocs(src: Pick<ManifestSource, 'list'>): Promise<ManifestDoc[]> {
  const out: ManifestDoc[] = [];
  for (const p of await src.list(MANIFEST_DIR)) {
    const d = docOf(p);
    if (d) out.push(d);
  }
  return out.sort(compareDocs);
}

export interface RunDocs {
  runId: string;
  /** The run manifest, absent while the run goes on or when it was killed. */
  manifest?: ManifestDoc;
  parts: ManifestDoc[];
}

/** Documents grouped by run, in run order. */
export function byRun(docs: ManifestDoc[]): RunDocs[] {
  const runs = new Map<string, RunDocs>();
  for (const d of [...docs].sort(compareDocs)) {
    const r = runs.get(d.runId) ?? { runId: d.runId, parts: [] };
    if (d.kind === 'run') r.manifest = d;
    else r.parts.push(d);
    runs.set(d.runId, r);
  }
  return [...runs.values()];
}

export type ManifestDocument = Manifest | RunManifest;

export const isRunManifest = (m: ManifestDocument): m is RunManifest => m.version === 2;

/** A document's bytes, checked: valid JSON, a version 1 manifest or part or a version 2 run manifest, naming the run its path names. */
export function parseDoc(buf: Buffer | string, path: string, runId: string): ManifestDocument {
  let m: ManifestDocument;
  try {
    m = JSON.parse(typeof buf === 'string' ? buf : buf.toString('utf8')) as ManifestDocument;
  } catch (e) {
    throw new ExportError('E_STATE', `manifest ${path} is not valid JSON: fix or remove it`, { cause: e });
  }
  return checkDoc(m, path, runId);
}

function checkDoc(m: ManifestDocument, path: string, runId: string): ManifestDocument {
  const ok =
    m !== null &&
    typeof m === 'object' &&
    ((m.version === 1 && Array.isArray(m.tasks)) || (m.version === 2 && Array.isArray((m as RunManifest).parts)));
  if (!ok) throw new ExportError('E_STATE', `manifest ${path} is not a version 1 manifest or a version 2 run manifest`);
  if (m.run_id !== runId) throw new ExportError('E_STATE', `manifest ${path} names run ${String(m.run_id)}, not ${runId}`);
  return m;
}

/** The fields of a document other than its entries. */
export type DocHeader = Omit<Manifest, 'tasks' | 'deletions'> | Omit<RunManifest, 'parts'>;

/** Entries of a document as they are read: a whole part, or one batch of a large old run manifest. */
export interface DocChunk {
  doc: ManifestDoc;
  header: DocHeader;
  tasks: ManifestTask[];
  deletions: Manifest['deletions'];
  purged: NonNullable<Manifest['purged']>;
  /** A version 2 run manifest: its summary and part list (it has no entries). */
  run?: RunManifest;
}

/**
 * Reads one document's entries. Parts and small documents are parsed whole (one chunk); an old
 * run manifest above a few MB is streamed, `batch` tasks at a time, so a run of any size is read
 * in bounded memory. Throws E_STATE on a document that is missing, not JSON or not a manifest.
 */
export async function* readDoc(src: ManifestSource, doc: ManifestDoc, o: { batch?: number } = {}): AsyncGenerator<DocChunk> {
  const buf = await src.read(doc.path);
  if (!buf) throw new ExportError('E_STATE', `manifest ${doc.path} disappeared while it was being read`);
  if (buf.length <= STREAM_ABOVE) {
    const m = parseDoc(buf, doc.path, doc.runId);
    yield chunkOf(doc, m);
    return;
  }
  const bad = (e: unknown) => new ExportError('E_STATE', `manifest ${doc.path} is not valid JSON: fix or remove it`, { cause: e });
  let scanned: ReturnType<typeof scanDocument>;
  try {
    scanned = scanDocument(buf);
  } catch (e) {
    throw bad(e);
  }
  // the entries were left out of the header: an empty list stands for them in the check
  const base = chunkOf(doc, checkDoc({ ...scanned.header, tasks: [], deletions: [] } as ManifestDocument, doc.path, doc.runId));
  if (base.run) {
    yield base;
    return;
  }
  let any = false;
  const batches = scanned.tasks(o.batch ?? 2000);
  for (;;) {
    let next: IteratorResult<ManifestTask[]>;
    try {
      next = batches.next();
    } catch (e) {
      throw bad(e);
    }
    if (next.done) break;
    any = true;
    yield { ...base, tasks: next.value };
  }
  if (!any) yield base;
}

export function chunkOf(doc: ManifestDoc, m: ManifestDocument): DocChunk {
  if (isRunManifest(m)) {
    const { parts: _parts, ...header } = m;
    return { doc, header, tasks: [], deletions: [], purged: m.purged ?? [], run: m };
  }
  const { tasks, deletions, ...header } = m;
  return { doc, header, tasks, deletions: Array.isArray(deletions) ? deletions : [], purged: m.purged ?? [] };
}

/**
 * A run's task entries, part by part: for a run manifest of this layout the parts it lists; for
 * an old run manifest its own tasks (it listed again every task of its parts, which were
 * removed); for a run without a run manifest (going on, or killed) every part present.
 */
export async function* runTasks(src: ManifestSource, run: RunDocs): AsyncGenerator<ManifestTask[]> {
  for (const doc of docsToRead(run, run.manifest ? await readHeader(src, run.manifest) : undefined)) {
    for await (const chunk of readDoc(src, doc)) if (chunk.tasks.length) yield chunk.tasks;
  }
}

/**
 * The documents whose entries make up a run. A finished run's parts are the ones its run
 * manifest lists: the parts it wrote while going (one per commit batch, small) are rewritten at
 * its end into as few full parts as its entries need, and removed.
 */
export function docsToRead(run: RunDocs, manifest: ManifestDocument | DocHeader | undefined): ManifestDoc[] {
  if (run.manifest && manifest?.version === 1) return [run.manifest];
  if (run.manifest && manifest?.version === 2 && 'parts' in manifest) {
    return manifest.parts.map((p) => docOf(p.path)).filter((d): d is ManifestDoc => d !== undefined && d.runId === run.runId);
  }
  return run.parts;
}

/** A run manifest's header (an old one's without its tasks), or undefined when it is gone. */
export async function readHeader(src: ManifestSource, doc: ManifestDoc): Promise<DocHeader | RunManifest> {
  for await (const chunk of readDoc(src, doc, { batch: 1 })) return chunk.run ?? chunk.header;
  throw new ExportError('E_STATE', `manifest ${doc.path} is empty`);
}

/** A run's task entries and rows in all, from its run manifest's summary. */
export function runTotalsSize(totals: Pick<RunTotals, 'tasks' | 'rows'>): { tasks: number; rows: number } {
  const sum = (o: Record<string, number | undefined>): number => Object.values(o).reduce<number>((a, n) => a + (n ?? 0), 0);
  return { tasks: sum(totals.tasks), rows: sum(totals.rows) };
}

/** Every run of the destination with its documents, in run order. */
export async function listRuns(src: Pick<ManifestSource, 'list'>): Promise<RunDocs[]> {
  return byRun(await listDocs(src));
}

/** One run's documents (listed under its own id only: `<run>-s1of2` is another run). */
export async function runDocsOf(src: Pick<ManifestSource, 'list'>, runId: string): Promise<RunDocs> {
  const docs = (await src.list(`${MANIFEST_DIR}${runId}`)).map(docOf).filter((d): d is ManifestDoc => d?.runId === runId);
  return byRun(docs)[0] ?? { runId, parts: [] };
}

/** A run as one document: its header (absent without a run manifest) and every entry of it. */
export interface WholeRun {
  runId: string;
  header?: DocHeader | RunManifest;
  tasks: ManifestTask[];
  deletions: Manifest['deletions'];
  purged: NonNullable<Manifest['purged']>;
}

/**
 * Reads a run whole (header and entries, part by part) into memory: for readers that look at a
 * few recent runs (report, estimates, a webhook run's results), never at every run of a
 * destination. Throws E_STATE on a document that cannot be read.
 */
export async function readRun(src: ManifestSource, run: RunDocs): Promise<WholeRun> {
  const header = run.manifest ? await readHeader(src, run.manifest) : undefined;
  const out: WholeRun = { runId: run.runId, header, tasks: [], deletions: [], purged: [...(header?.purged ?? [])] };
  for (const doc of docsToRead(run, header)) {
    for await (const chunk of readDoc(src, doc)) {
      out.tasks.push(...chunk.tasks);
      out.deletions.push(...chunk.deletions);
      if (doc !== run.manifest) out.purged.push(...chunk.purged);
    }
  }
  return out;
}

/** What rewriting documents needs of a destination. */
export interface ManifestStore extends ManifestSource {
  writeAtomic(relPath: string, data: string | Buffer): Promise<unknown>;
}

/**
 * Removes deletion records from the documents that hold them (parts, and old run manifests; a
 * version 2 run manifest holds none), each rewritten atomically on one line, only when one of
 * its records goes: a purge's redaction of ids written under a weaker policy or of a school
 * whose access was revoked. Task entries stay (they name files, not people). `docs` chooses
 * which documents are looked at. Returns the documents rewritten and those that could not be
 * read (left as they are).
 */
export async function redactDeletions(
  store: ManifestStore,
  drop: (runId: string, d: Manifest['deletions'][number]) => boolean,
  o: { docs?: (d: ManifestDoc) => boolean; concurrency?: number } = {},
): Promise<{ redacted: string[]; unreadable: string[] }> {
  const docs = (await listDocs(store)).filter((d) => o.docs?.(d) ?? true);
  const redacted: string[] = [];
  const unreadable: string[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < docs.length) {
      const doc = docs[next++]!;
      const buf = await store.read(doc.path);
      if (!buf) continue; // a run removed its parts meanwhile
      let m: { deletions?: unknown; run_id?: unknown };
      try {
        m = JSON.parse(buf.toString('utf8')) as typeof m;
      } catch {
        unreadable.push(doc.path);
        continue;
      }
      if (!Array.isArray(m.deletions)) continue;
      const all = m.deletions as Manifest['deletions'];
      const kept = all.filter((d) => !drop(String(m.run_id), d));
      if (kept.length === all.length) continue;
      await store.writeAtomic(doc.path, JSON.stringify({ ...m, deletions: kept }) + '\n');
      redacted.push(doc.path);
    }
  };
  await Promise.all(Array.from({ length: o.concurrency ?? 8 }, worker));
  return { redacted: redacted.sort(), unreadable: unreadable.sort() };
}

/**
 * The data file paths the given parts list, read leniently (only `tasks[].files[].path` is
 * needed): undefined when one cannot be read, so nothing is removed on a guess.
 */
export async function listedFiles(src: ManifestSource, parts: string[]): Promise<Set<string> | undefined> {
  const listed = new Set<string>();
  for (const p of parts) {
    const buf = await src.read(p);
    let m: { tasks?: { files?: { path?: unknown }[] }[] };
    try {
      if (!buf) return undefined;
      m = JSON.parse(buf.toString('utf8')) as typeof m;
    } catch {
      return undefined;
    }
    for (const t of m.tasks ?? []) for (const f of t.files ?? []) if (typeof f.path === 'string') listed.add(f.path);
  }
  return listed;
}

// ---------------------------------------------------------------------------------------------
// Writing

/**
 * A task's manifest entry, its fields always in this order (absent ones undefined, which JSON
 * leaves out): a run keeps every entry until its final parts are written, and entries spread from
 * optional parts took a hidden class of their own each (about 250 bytes an entry in a heap snapshot
 * of a 2,000-school night). Most entries of an incremental night list no file and no row (unchanged
 * and empty reads): they share one frozen empty list and count (88 bytes an entry otherwise, 7 MB
 * at 10,000 schools); frozen, so a change to them would throw instead of reaching every entry.
 */
export function taskEntry(t: ManifestTask): ManifestTask {
  return {
    school_id: t.school_id,
    region: t.region,
    resource: t.resource,
    status: t.status,
    mode: t.mode,
    updated_after: t.updated_after,
    watermark: t.watermark,
    files: t.files.length === 0 ? NO_FILES : t.files,
    rows: isEmpty(t.rows) ? NO_ROWS : t.rows,
    drift_fields: t.drift_fields,
    replaced_surrogates: t.replaced_surrogates,
    checkpoint: t.checkpoint,
    scope_masked: t.scope_masked,
    scope_guarded: t.scope_guarded,
    content_sha256: t.content_sha256,
    read_at: t.read_at,
    unchanged_since: t.unchanged_since,
    compaction: t.compaction,
    error: t.error,
  };
}

const NO_FILES: ManifestTask['files'] = Object.freeze([]) as unknown as ManifestTask['files'];
const NO_ROWS: ManifestTask['rows'] = Object.freeze({});

function isEmpty(o: object): boolean {
  for (const _ in o) return false;
  return true;
}

/** One entry to pack: a task or a deletion record, with who it belongs to (the packer reports it back). */
export interface PackItem<O> {
  kind: 'task' | 'deletion';
  value: ManifestTask | Manifest['deletions'][number];
  owner: O;
}

export interface PackedPart<O> {
  text: string;
  tasks: number;
  /** Owners with an entry in this part, and those whose task entry is in it. */
  owners: Set<O>;
  taskOwners: Set<O>;
}

/**
 * Packs entries into parts of at most `limit` bytes each (one line of JSON with its newline),
 * in order, each part yielded as soon as it is full: a run's final parts (every task of the run)
 * are written one at a time, never all held as text. `header(n)` gives the part's fields besides
 * its entries. A task entry too big for a part on its own is split over entries of the same
 * identity, each with some of its files (the first keeps the row counts): loaders union a task's
 * files by its identity. Deletion records spill over as many parts as they need.
 */
export function* packParts<O>(
  header: (n: number) => object,
  firstPart: number,
  items: Iterable<PackItem<O>>,
  limit = PART_LIMIT,
): Generator<PackedPart<O>> {
  let n = firstPart;
  let head = openPart(header(n));
  let tasks: string[] = [];
  let dels: string[] = [];
  let owners = new Set<O>();
  let taskOwners = new Set<O>();
  // bytes so far kept as running sums: measuring the joined entries at every add was quadratic
  // in a part's entries (18% of an incremental night's CPU at 2,000 schools)
  let headBytes = Buffer.byteLength(head);
  let used = 0;
  const TAIL = ',"tasks":[],"deletions":[]}\n'.length;
  const close = (): PackedPart<O> | undefined => {
    if (tasks.length === 0 && dels.length === 0) return undefined;
    const text = `${head},"tasks":[${tasks.join(',')}],"deletions":[${dels.join(',')}]}\n`;
    if (Buffer.byteLength(text) > limit) throw new Error(`manifest part ${n} is ${Buffer.byteLength(text)} bytes, over ${limit}`);
    const part = { text, tasks: tasks.length, owners, taskOwners };
    n += 1;
    head = openPart(header(n));
    headBytes = Buffer.byteLength(head);
    used = 0;
    tasks = [];
    dels = [];
    owners = new Set();
    taskOwners = new Set();
    return part;
  };
  /** Adds an entry; returns the part it closed to make room, if any. */
  const add = (json: string, item: PackItem<O>): PackedPart<O> | undefined => {
    // one byte per character is not enough for non-ASCII text: count bytes
    const bytes = Buffer.byteLength(json) + 1; // and its comma
    if (headBytes + bytes + 64 > limit) throw new Error(`a manifest entry of ${bytes} bytes cannot fit a part of ${limit}`);
    const closed = headBytes + used + bytes + TAIL + 16 > limit ? close() : undefined;
    (item.kind === 'task' ? tasks : dels).push(json);
    used += bytes;
    owners.add(item.owner);
    if (item.kind === 'task') taskOwners.add(item.owner);
    return closed;
  };
  for (const item of items) {
    const pieces = item.kind === 'deletion' ? [JSON.stringify(item.value)] : splitTask(item.value as ManifestTask, limit - headBytes - 64);
    for (const piece of pieces) {
      const closed = add(piece, item);
      if (closed) yield closed;
    }
  }
  const last = close();
  if (last) yield last;
}

function openPart(h: object): string {
  const json = JSON.stringify(h);
  return json.slice(0, -1); // without its closing brace: entries follow
}

/** A task entry as JSON, split over entries of the same identity when it is larger than `room`. */
function splitTask(task: ManifestTask, room: number): string[] {
  const whole = JSON.stringify(task);
  if (Buffer.byteLength(whole) + 1 <= room || task.files.length <= 1) return [whole];
  const out: string[] = [];
  let files: ManifestTask['files'] = [];
  const entry = (first: boolean): ManifestTask => ({ ...task, files, ...(first ? {} : { rows: {} }) });
  for (const f of task.files) {
    const next = [...files, f];
    const trial = JSON.stringify({ ...entry(out.length === 0), files: next });
    if (files.length > 0 && Buffer.byteLength(trial) + 1 > room) {
      out.push(JSON.stringify(entry(out.length === 0)));
      files = [f];
    } else files = next;
  }
  out.push(JSON.stringify(entry(out.length === 0)));
  return out;
}

const MAX_FAILURES = 100;

/** The run's totals from its entries (a run's summary; bounded). */
export function runTotals(tasks: Iterable<ManifestTask>, deletions: number): RunTotals {
  const totals: RunTotals = { tasks: {}, rows: {}, files: 0, bytes: 0, deletions, failures: [], failures_total: 0 };
  for (const t of tasks) {
    totals.tasks[t.status] = (totals.tasks[t.status] ?? 0) + 1;
    if (t.status === 'committed' || t.status === 'compacted') {
      for (const f of t.files) {
        totals.files += 1;
        totals.bytes += f.bytes;
        totals.rows[f.table] = (totals.rows[f.table] ?? 0) + f.rows;
      }
    }
    if (t.status !== 'committed' && t.status !== 'unchanged' && t.status !== 'compacted') {
      totals.failures_total += 1;
      if (totals.failures.length < MAX_FAILURES)
        totals.failures.push({ school_id: t.school_id, resource: t.resource, status: t.status, code: t.error?.code ?? 'E_INTERNAL' });
    } else if (t.error) {
      totals.failures_total += 1;
      if (totals.failures.length < MAX_FAILURES)
        totals.failures.push({ school_id: t.school_id, resource: t.resource, status: t.status, code: t.error.code });
    }
  }
  return totals;
}

/** The run manifest's text (one line): written last, once every part it lists is durable. */
export function runManifestText(m: RunManifest, limit = PART_LIMIT): string {
  const text = JSON.stringify(m) + '\n';
  if (Buffer.byteLength(text) > limit) {
    // Thousands of parts (a run of tens of thousands of schools) still fit; beyond that the part
    // list is what grows: readers find parts by listing the run's folder anyway.
    throw new ExportError('E_STATE', `the run manifest of ${m.run_id} would be ${Buffer.byteLength(text)} bytes, over ${limit}`);
  }
  return text;
}
