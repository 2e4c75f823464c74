import { compileFlattener, type Flattener } from '../flatten/index.ts';
import type { Format, FormatOptions } from '../format/types.ts';
import type { Manifest, ManifestFile } from '../manifest/types.ts';
import { resourceByName, tableSchemas } from '../resources/index.ts';
import type { ResourceSpec } from '../resources/types.ts';
import type { Sink } from '../sink/types.ts';
import type { Row, TableSchema } from '../table.ts';
import type { PageResult } from '../encode/page-work.ts';
import { TableFiles } from './table-files.ts';
import type { ContentHash } from './content-hash.ts';
import type { PersonalData } from '../privacy/personal-data.ts';

/** The school a task reads, as discovery found it. */
export interface SchoolRef {
  id: string;
  region: string;
  domain?: string;
  record: unknown; // the school object from discovery
  /** The school's own token (delivered by schoolApproved), used for its requests instead of the run's. */
  token?: string;
}

export interface TaskOutputOptions {
  spec: ResourceSpec;
  school: SchoolRef;
  sink: Sink;
  format: Format;
  formatOptions: FormatOptions;
  runId: string;
  extractedAt: string;
  limits: { maxRows: number; maxBytes: number };
  nextSeq: (dir: string) => number;
  /** Collect the key values written (tables whose deletions are detected by comparing snapshots). */
  collectKeys: boolean;
  /** The run's personal-data policy: applied to each table's rows after flattening, before writing. */
  personalData?: PersonalData;
  /** Hash the content written (a full read that may turn out unchanged): a fresh hash for each (re)start of the read. */
  content?: () => ContentHash;
  /** There is a last content to compare with: hold the first page (see `held`). */
  holdFirstPage?: boolean;
}

/** What was committed since the previous commit of the same task (one manifest entry). */
export interface CommittedPiece {
  files: ManifestFile[];
  rows: Record<string, number>;
  deletions: Manifest['deletions'];
}

const DELETIONS_SCHEMA: TableSchema = tableSchemas(resourceByName('deletions')!)[0]!;

/**
 * The seam where one task's records become files: flatten per resource, one TableFiles per table,
 * deletions and key values collected on the way. commit() makes what was written durable (at the
 * end of the task, or at a checkpoint) and can be called again; abort() discards what was not.
 * Everything here runs per page; nothing per row beyond the flattener's and writers' own work.
 */
export class TaskOutput {
  /** Compiled on the first flattened page: pages encoded by src/encode, and empty reads, never need it. */
  private flattenerOrUndefined: Flattener | undefined;
  private readonly schemas: Map<string, TableSchema>;
  private readonly files = new Map<string, TableFiles>();
  private readonly ctx: { schoolId: string; region: string; runId: string; extractedAt: string };
  private pendingDeletions: Manifest['deletions'] = [];
  /** Key values written in this task (when collectKeys), for snapshot comparison. */
  readonly keys: Set<string> | undefined;
  /** Records handed in since the task began. */
  records = 0;
  /** The content hash of everything written since the read began, while it is one piece (content-hash.ts). */
  private content: ContentHash | undefined;
  /** Tables whose rows deletion records read from the API named (their content changed behind any hash). */
  readonly deletedTables = new Set<string>();

  constructor(private readonly o: TaskOutputOptions) {
    this.schemas = new Map(tableSchemas(o.spec).map((t) => [t.name, t]));
    // Snapshot-detected deletions of this resource go to the deletions table.
    if (!this.schemas.has('deletions')) this.schemas.set('deletions', DELETIONS_SCHEMA);
    this.ctx = { schoolId: o.school.id, region: o.school.region, runId: o.runId, extractedAt: o.extractedAt };
    this.keys = o.collectKeys ? new Set<string>() : undefined;
    this.content = o.content?.();
    this.holdNext = this.content !== undefined && o.holdFirstPage === true;
  }

  private get flattener(): Flattener {
    return (this.flattenerOrUndefined ??= compileFlattener(this.o.spec));
  }

  get metaContext(): { schoolId: string; region: string; runId: string; extractedAt: string } {
    return this.ctx;
  }

  async writeRecords(records: readonly unknown[]): Promise<void> {
    const tables = this.flattener.flattenBatch(records, this.ctx);
    // Before anything is written or collected: files, manifest deletions and snapshot keys all
    // hold the values as the policy leaves them (docs/personal-data.md).
    if (this.o.personalData)
      for (const [table, rows] of tables) if (rows.length) this.o.personalData.transformFor(this.schemas.get(table)!)?.(rows);
    for (const [table, rows] of tables) if (rows.length) this.content?.rows(table, rows);
    if (this.keys) {
      const key = this.o.spec.key[0]!;
      for (const r of tables.get(this.o.spec.name) ?? []) this.keys.add(String(r[key]));
    }
    this.records += records.length;
    await this.emit(async () => {
      for (const [table, rows] of tables) await this.writeRows(table, rows);
    });
  }

  /**
   * A page already encoded by src/encode (worker threads or the main thread): its rows go to the
   * same files as writeRecords' would, with the same bytes; its key values and drift are merged.
   */
  async writeEncoded(page: PageResult): Promise<void> {
    for (const { table, chunk } of page.tables) this.content?.chunk(table, chunk, this.schemaOf(table));
    if (this.keys && page.keys) for (const k of page.keys) this.keys.add(k);
    for (const [table, names] of page.drift ?? []) {
      let set = this.encodedDrift.get(table);
      if (!set) this.encodedDrift.set(table, (set = new Set()));
      for (const n of names) set.add(n);
    }
    this.records += page.records;
    await this.emit(async () => {
      for (const { table, chunk } of page.tables) await this.filesFor(table).writeEncoded(chunk);
    });
  }

  /**
   * While the read may still turn out unchanged (its content is hashed), its first page is held
   * here instead of written: a one-page read found unchanged then never opens a file (most tasks
   * of a nightly run over thousands of schools). The next write, or commit(), writes it first.
   * One page at most, so memory stays bounded.
   */
  private held: (() => Promise<void>) | undefined;
  private holdNext = false;

  private async emit(write: () => Promise<void>): Promise<void> {
    if (this.holdNext) {
      this.holdNext = false;
      this.held = write;
      return;
    }
    await this.release();
    await write();
  }

  private async release(): Promise<void> {
    const write = this.held;
    this.held = undefined;
    if (write) await write();
  }

  /** Drift of pages encoded elsewhere (their flattener is not this one). */
  private readonly encodedDrift = new Map<string, Set<string>>();

  /** Rows of one table (also derived ones, such as snapshot-detected deletions). */
  async writeRows(table: string, rows: Row[]): Promise<void> {
    if (rows.length === 0) return;
    await this.release(); // after the rows of a held page, in the order they came
    await this.filesFor(table).write(rows);
    if (table === 'deletions') collectDeletions(rows, this.o.school.id, this.pendingDeletions, this.deletedTables);
  }

  /** The hash of the content written so far, when it is kept (see content-hash.ts). */
  contentDigest(): string | undefined {
    return this.content?.digest();
  }

  /** The read goes on in pieces (a checkpoint): it can no longer be found unchanged. */
  forgetContent(): void {
    this.content = undefined;
  }

  /** Makes every file written since the previous commit durable and returns them. */
  async commit(): Promise<CommittedPiece> {
    await this.release();
    const files: ManifestFile[] = [];
    for (const f of this.files.values()) files.push(...(await f.commit()));
    const rows: Record<string, number> = {};
    for (const f of files) rows[f.table] = (rows[f.table] ?? 0) + f.rows;
    const deletions = this.pendingDeletions;
    this.pendingDeletions = [];
    return { files, rows, deletions };
  }

  async abort(): Promise<void> {
    this.held = undefined;
    this.holdNext = false;
    await Promise.allSettled([...this.files.values()].map((f) => f.abort()));
  }

  /** Forgets everything since the last commit, keys included: the read starts over as a new snapshot. */
  async restart(): Promise<void> {
    await this.abort();
    this.pendingDeletions = [];
    this.keys?.clear();
    this.content = this.o.content?.();
    this.holdNext = this.content !== undefined && this.o.holdFirstPage === true;
  }

  /** Undeclared fields seen so far, per table. */
  drift(): Record<string, string[]> {
    const out: Record<string, string[]> = {};
    const all = new Map<string, Set<string>>();
    for (const m of [this.flattenerOrUndefined?.drift() ?? new Map<string, Set<string>>(), this.encodedDrift]) {
      for (const [t, fields] of m) {
        const set = all.get(t) ?? new Set<string>();
        for (const f of fields) set.add(f);
        all.set(t, set);
      }
    }
    for (const [t, fields] of all) if (fields.size) out[t] = [...fields].sort();
    return out;
  }

  private schemaOf(table: string): TableSchema {
    const schema = this.schemas.get(table);
    if (!schema) throw new Error(`flattener produced rows for undeclared table ${table}`);
    return schema;
  }

  private filesFor(table: string): TableFiles {
    let f = this.files.get(table);
    if (!f) {
      const schema = this.schemaOf(table);
      const { sink, format, formatOptions, runId, nextSeq, limits } = this.o;
      const dir = `${table}/region=${this.o.school.region}/school_id=${this.o.school.id}`;
      f = new TableFiles({ sink, format, formatOptions, schema, dir, runId, nextSeq, limits });
      this.files.set(table, f);
    }
    return f;
  }
}

/** Deletions also go into the run manifest, so a reader can act on them without the files. */
function collectDeletions(rows: Row[], schoolId: string, out: Manifest['deletions'], tables: Set<string>): void {
  for (const r of rows) {
    if (r.detected_by !== 'snapshot' && typeof r.table === 'string') tables.add(r.table);
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
