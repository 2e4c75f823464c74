import type { DuckDBAppender, DuckDBConnection } from '@duckdb/node-api';
import type { Readable } from 'node:stream';
import { ExportError } from '../errors.ts';
import { isSafeId } from '../ids.ts';
import { MANIFEST_DIR, RUN_ID, readDoc, type DocChunk, type ManifestDoc, type ManifestSource } from '../manifest/layout.ts';
import type { ManifestTask } from '../manifest/types.ts';
import { T } from './nightly.ts';
import { inScratch, SCRATCH } from './duckdb-scratch.ts';
import { duckdbSql } from './render-duckdb.ts';

/** The part of a Sink the loaders use (a full Sink fits). */
export interface WarehouseSource extends ManifestSource {
  readonly url?: string;
  localPath?(relPath: string): string;
  /** Streams a file (not in Sink yet): when present, remote files are copied without buffering them whole. */
  readStream?(relPath: string): Promise<Readable | undefined>;
}

export { MANIFEST_DIR };

// Relative data paths as the pipeline writes them: no empty, '.' or '..' segments, no backslash.
const SAFE_REL_PATH = /^(?!.*(^|\/)\.{1,2}(\/|$))[A-Za-z0-9_=.-]+(\/[A-Za-z0-9_=.-]+)*$/;
/** Entries whose files a load reads (compacted: where sources' rows are now). */
const LOADED: ReadonlySet<string> = new Set(['committed', 'unchanged', 'compacted']);

/** '_manifests/<run>/part-00001.json' -> '<run>/part-00001': how loaders before task keys named an applied document. */
export function legacyKey(doc: ManifestDoc): string {
  return doc.kind === 'run' ? doc.runId : doc.path.slice(MANIFEST_DIR.length, -'.json'.length);
}

const d = duckdbSql();
/** Rows an appender takes before they are flushed into their table, where the memory limit bounds them. */
const FLUSH_ROWS = 10_000;

/**
 * `warehouse load`'s side of the manifest tables the static script builds with SQL (nightly.ts
 * manifestStatements): the documents it has not read to the end are read one at a time, their
 * entries checked (ids and paths become SQL text and paths) and appended to the same (scratch or TEMP)
 * tables, so memory holds one part whatever the number of runs and tasks, and the pending
 * tasks, files and purges are then worked out by the SQL every dialect shares.
 */
export class ManifestTables {
  private readonly appenders = new Map<string, { appender: DuckDBAppender; rows: number }>();

  private readonly catalog: string | undefined;

  /**
   * `inScratch`: the tables go to `warehouse load`'s scratch database (duckdb-scratch.ts), where
   * they are compressed and DuckDB may evict them; otherwise TEMP tables (held in memory, or
   * spilled to temporary files uncompressed).
   */
  constructor(
    private readonly conn: DuckDBConnection,
    o: { inScratch?: boolean } = {},
  ) {
    this.catalog = o.inScratch ? SCRATCH : undefined;
  }

  /** The table's name in SQL text. */
  private name(table: string): string {
    return this.catalog ? inScratch(table) : d.temp(table);
  }

  async create(): Promise<void> {
    const v = 'VARCHAR';
    const id = `run_id ${v}, school_id ${v}, resource ${v}, seq BIGINT`;
    const ddl: [string, string][] = [
      [T.docs, `manifest ${v}, legacy_key ${v}`],
      [
        T.tasks,
        `manifest ${v}, run_id ${v}, pseudonymised INTEGER, school_id ${v}, resource ${v}, status ${v}, mode ${v}, seq BIGINT, piece_final INTEGER, snapshot ${v}, since ${v}`,
      ],
      [T.files, `${id}, table_name ${v}, path ${v}, row_count BIGINT, sha256 ${v}, bytes BIGINT, max_line_bytes BIGINT`],
      [T.purges, `run_id ${v}, school_id ${v}, manifest ${v}`],
      [T.masked, `${id}, table_name ${v}, column_name ${v}`],
      [T.guarded, `${id}, table_name ${v}, column_name ${v}`],
      [T.sources, `${id}, source_path ${v}, source_run ${v}, source_seq BIGINT, row_count BIGINT`],
    ];
    for (const [name, cols] of ddl)
      await this.conn.run(`CREATE OR REPLACE ${this.catalog ? '' : 'TEMP '}TABLE ${this.name(name)} (${cols})`);
  }

  private async appender(table: string): Promise<{ appender: DuckDBAppender; rows: number }> {
    let a = this.appenders.get(table);
    if (!a) {
      a = { appender: await this.conn.createAppender(table, this.catalog ? 'main' : null, this.catalog ?? null), rows: 0 };
      this.appenders.set(table, a);
    }
    return a;
  }

  private async row(table: string, values: (string | number | null | undefined)[]): Promise<void> {
    const a = await this.appender(table);
    const { appender } = a;
    for (const v of values) {
      if (v === null || v === undefined) appender.appendNull();
      else if (typeof v === 'number') appender.appendBigInt(BigInt(Math.trunc(v)));
      else appender.appendVarchar(v);
    }
    appender.endRow();
    // DuckDB's appender holds its rows outside the memory limit until a flush (it flushes by
    // itself only every 204,800): a load of 10,000 schools' manifests held ~50 MB that way
    if (++a.rows >= FLUSH_ROWS) {
      appender.flushSync();
      a.rows = 0;
    }
  }

  /** Makes what was appended visible to SQL. */
  flush(): void {
    for (const a of this.appenders.values()) {
      a.appender.flushSync();
      a.rows = 0;
    }
  }

  close(): void {
    for (const a of this.appenders.values()) a.appender.closeSync();
    this.appenders.clear();
  }

  async addDoc(doc: ManifestDoc): Promise<void> {
    await this.row(T.docs, [doc.path, legacyKey(doc)]);
  }

  /** A document's entries (or a batch of them). Unsafe ids and paths of entries a load reads are refused. */
  async add(chunk: DocChunk): Promise<void> {
    const runId = chunk.doc.runId;
    const pseudonymised = chunk.header.personal_data?.person_id === 'pseudonymise' ? 1 : 0;
    for (const t of chunk.tasks) {
      const status = String(t.status);
      const loaded = LOADED.has(status);
      const school = loaded ? safeSchool(runId, t.school_id) : String(t.school_id);
      if (loaded) for (const f of t.files ?? []) checkPath(runId, f.path, f.table);
      const seq = t.checkpoint?.seq ?? 0;
      const final = t.checkpoint?.final ?? true;
      const key = [runId, school, String(t.resource), seq] as const;
      await this.row(T.tasks, [
        chunk.doc.path,
        runId,
        pseudonymised,
        school,
        String(t.resource),
        status,
        String(t.mode),
        seq,
        final && status === 'committed' ? 1 : 0,
        t.checkpoint?.snapshot ?? runId,
        // an unchanged read's content is in the files of this run (a later full read, for supersede.ts)
        typeof t.unchanged_since === 'string' ? t.unchanged_since : null,
      ]);
      for (const f of t.files ?? [])
        await this.row(T.files, [...key, f.table, f.path, f.rows, f.sha256, size(f.bytes), size(f.max_line_bytes)]);
      for (const [table, cols] of columnsOf(t.scope_masked)) await this.row(T.masked, [...key, table, cols]);
      for (const [table, cols] of columnsOf(t.scope_guarded)) await this.row(T.guarded, [...key, table, cols]);
      if (status === 'compacted') {
        for (const s of t.compaction?.sources ?? []) {
          checkPath(runId, s.path, t.compaction!.table);
          await this.row(T.sources, [...key, s.path, s.run_id, s.seq ?? 0, s.rows]);
        }
      }
    }
    for (const p of purgesOf(runId, chunk.purged)) await this.row(T.purges, [p.runId, p.schoolId, chunk.doc.path]);
  }

  /** Reads documents into the tables, a few ahead (parts are at most 1 MB; an old run manifest is read alone). */
  async read(src: WarehouseSource, docs: ManifestDoc[], onDoc?: (doc: ManifestDoc) => void): Promise<void> {
    const ahead = 8;
    const prefetch = new Map<string, Promise<Buffer | undefined>>();
    const fetchOne = (doc: ManifestDoc): Promise<Buffer | undefined> => {
      let p = prefetch.get(doc.path);
      if (!p) {
        p = src.read(doc.path);
        p.catch(() => undefined);
        prefetch.set(doc.path, p);
      }
      return p;
    };
    for (let i = 0; i < docs.length; i++) {
      const doc = docs[i]!;
      for (let j = i + 1; j < Math.min(docs.length, i + ahead) && docs[j]!.kind === 'part'; j++) void fetchOne(docs[j]!);
      const buffered = doc.kind === 'part' ? fetchOne(doc) : undefined;
      const once: ManifestSource = { read: (p) => (p === doc.path && buffered ? buffered : src.read(p)), list: (p) => src.list(p) };
      for await (const chunk of readDoc(once, doc)) await this.add(chunk);
      prefetch.delete(doc.path);
      await this.addDoc(doc);
      onDoc?.(doc);
    }
    this.flush();
  }
}

function columnsOf(m: ManifestTask['scope_masked']): [string, string][] {
  if (!m || typeof m !== 'object') return [];
  return Object.entries(m).flatMap(([table, cols]) => (Array.isArray(cols) ? cols : []).map((c): [string, string] => [table, String(c)]));
}

// School ids end up in SQL text and paths: only the id form the API uses is accepted.
/**
 * A document's purges, checked, each at the run it applies at: a purge of what a weaker
 * personal-data policy wrote (before_run) removes the rows of runs before that run, not before
 * the purge's own, so it is applied as a purge at before_run.
 */
export function purgesOf(runId: string, purged: DocChunk['purged']): { runId: string; schoolId: string }[] {
  return purged.map((p) => ({
    runId: p.before_run === undefined ? runId : checkedRunId(runId, p.before_run),
    schoolId: safeSchool(runId, p.school_id),
  }));
}

function checkedRunId(runId: string, v: unknown): string {
  if (typeof v !== 'string' || !RUN_ID.test(v))
    throw new ExportError('E_STATE', `manifest ${runId} names an unsafe before_run ${JSON.stringify(String(v)).slice(0, 60)}`);
  return v;
}

/** A size a manifest states, or null when it states none (older manifests) or nonsense. */
const size = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : null);

function safeSchool(runId: string, id: unknown): string {
  if (!isSafeId(id))
    throw new ExportError('E_STATE', `manifest ${runId} names an unsafe school id ${JSON.stringify(String(id)).slice(0, 60)}`);
  return id;
}

function checkPath(runId: string, path: unknown, table: unknown): void {
  if (typeof path !== 'string' || !SAFE_REL_PATH.test(path) || !path.startsWith(`${String(table)}/`)) {
    throw new ExportError(
      'E_STATE',
      `manifest ${runId} lists an unsafe or misplaced file path ${JSON.stringify(String(path)).slice(0, 120)}`,
    );
  }
}
