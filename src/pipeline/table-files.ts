import { ExportError, oneLine } from '../errors.ts';
import type { Format, FormatOptions, FormatWriter } from '../format/types.ts';
import { sliceChunk, type EncodedChunk } from '../format/chunk.ts';
import type { Sink, SinkFile } from '../sink/types.ts';
import type { ManifestFile } from '../manifest/types.ts';
import type { Row, TableSchema } from '../table.ts';

export interface TableFilesOptions {
  sink: Sink;
  format: Format;
  formatOptions: FormatOptions;
  schema: TableSchema;
  /** `<table>/region=<code>/school_id=<id>` */
  dir: string;
  runId: string;
  /** A per-directory counter the whole run shares (a table may get files from two tasks, e.g. deletions). */
  nextSeq: (dir: string) => number;
  limits: { maxRows: number; maxBytes: number };
}

interface OpenFile {
  file: SinkFile;
  writer: FormatWriter;
  path: string;
}

/**
 * Writes one table's rows for one school into files that roll over at a row or byte count.
 * Files are committed (durable, at their final name) only by commit(); abort() leaves nothing.
 * Names: <table>/region=<code>/school_id=<id>/<run_id>-<seq>.<ext>.
 */
export class TableFiles {
  private current: OpenFile | undefined;
  private done: OpenFile[] = [];
  /** Rows written since the task began (committed or not). */
  rows = 0;

  constructor(private readonly o: TableFilesOptions) {}

  async write(rows: Row[]): Promise<void> {
    await this.failingAs(() => this.writeRows(rows));
  }

  private async writeRows(rows: Row[]): Promise<void> {
    let offset = 0;
    while (offset < rows.length) {
      const cur = this.current ?? (await this.open());
      const room = this.o.limits.maxRows - cur.writer.rowsWritten;
      const slice = offset === 0 && rows.length <= room ? rows : rows.slice(offset, offset + room);
      await cur.writer.write(slice);
      offset += slice.length;
      this.rows += slice.length;
      if (cur.writer.rowsWritten >= this.o.limits.maxRows || cur.writer.bytesWritten >= this.o.limits.maxBytes) await this.roll();
    }
  }

  /**
   * Rows already encoded for the format (src/encode): the same files, cut at the same rows, as
   * write() of the same rows would make.
   */
  async writeEncoded(chunk: EncodedChunk): Promise<void> {
    await this.failingAs(() => this.writeChunk(chunk));
  }

  private async writeChunk(chunk: EncodedChunk): Promise<void> {
    let offset = 0;
    while (offset < chunk.rows) {
      const cur = this.current ?? (await this.open());
      const room = this.o.limits.maxRows - cur.writer.rowsWritten;
      const slice = sliceChunk(chunk, offset, offset + room);
      await cur.writer.writeEncoded!(slice);
      offset += slice.rows;
      this.rows += slice.rows;
      if (cur.writer.rowsWritten >= this.o.limits.maxRows || cur.writer.bytesWritten >= this.o.limits.maxBytes) await this.roll();
    }
  }

  /** A write that fails (a full disk, a closed stream) names the file it was writing and the cause. */
  private async failingAs(write: () => Promise<void>): Promise<void> {
    try {
      await write();
    } catch (e) {
      if (e instanceof ExportError) throw e;
      const rel = this.current?.path ?? this.o.dir;
      const where = this.o.sink.localPath?.(rel) ?? `${this.o.sink.url}/${rel}`;
      throw new ExportError('E_SINK', `writing ${where} failed: ${oneLine(e)}`, { cause: e });
    }
  }

  private async open(): Promise<OpenFile> {
    const seq = String(this.o.nextSeq(this.o.dir)).padStart(4, '0');
    const path = `${this.o.dir}/${this.o.runId}-${seq}.${this.o.format.extension(this.o.formatOptions)}`;
    const file = await this.o.sink.openFile(path);
    const writer = this.o.format.open(this.o.schema, file.stream, this.o.formatOptions);
    this.current = { file, writer, path };
    return this.current;
  }

  private async roll(): Promise<void> {
    const cur = this.current;
    if (!cur) return;
    this.current = undefined;
    await cur.writer.finish();
    this.done.push(cur);
  }

  /**
   * Finishes the open file and makes every file written since the last commit durable; returns
   * them for the manifest. Later writes open new files (a checkpoint is a commit mid-task).
   */
  async commit(): Promise<ManifestFile[]> {
    await this.roll();
    const out: ManifestFile[] = [];
    for (const f of this.done) {
      const { bytes, sha256 } = await f.file.commit();
      const longest = f.writer.maxLineBytes;
      out.push({
        table: this.o.schema.name,
        path: f.path,
        rows: f.writer.rowsWritten,
        bytes,
        sha256,
        ...(longest ? { max_line_bytes: longest } : {}),
      });
    }
    this.done = [];
    return out;
  }

  /** Discards every file not yet committed. */
  async abort(): Promise<void> {
    const all = this.current ? [...this.done, this.current] : this.done;
    this.current = undefined;
    this.done = [];
    await Promise.allSettled(all.map((f) => f.file.abort()));
  }
}
