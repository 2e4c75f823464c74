import type { Format, FormatOptions, FormatWriter } from '../format/types.ts';
import type { Sink, SinkFile } from '../sink/types.ts';
import type { ManifestFile } from '../manifest/types.ts';
import type { Row, TableSchema } from '../table.ts';

/**
 * Writes one table's rows for one school into files that roll over at a row or byte count.
 * Files are committed (durable, at their final name) only by finish(); abort() leaves nothing.
 * Names: <table>/region=<code>/school_id=<id>/<run_id>-<seq>.<ext>, seq from a per-directory
 * counter the whole run shares (a table may get files from two tasks, e.g. deletions).
 */
export class TableFiles {
  private current: { file: SinkFile; writer: FormatWriter; path: string } | undefined;
  private readonly done: { file: SinkFile; writer: FormatWriter; path: string }[] = [];
  rows = 0;

  constructor(
    private readonly sink: Sink,
    private readonly format: Format,
    private readonly formatOptions: FormatOptions,
    private readonly schema: TableSchema,
    private readonly dir: string,
    private readonly runId: string,
    private readonly nextSeq: (dir: string) => number,
    private readonly limits: { maxRows: number; maxBytes: number },
  ) {}

  async write(rows: Row[]): Promise<void> {
    let offset = 0;
    while (offset < rows.length) {
      const cur = this.current ?? (await this.open());
      const room = this.limits.maxRows - cur.writer.rowsWritten;
      const slice = offset === 0 && rows.length <= room ? rows : rows.slice(offset, offset + room);
      await cur.writer.write(slice);
      offset += slice.length;
      this.rows += slice.length;
      if (cur.writer.rowsWritten >= this.limits.maxRows || cur.writer.bytesWritten >= this.limits.maxBytes) await this.roll();
    }
  }

  private async open() {
    const seq = String(this.nextSeq(this.dir)).padStart(4, '0');
    const path = `${this.dir}/${this.runId}-${seq}.${this.format.extension(this.formatOptions)}`;
    const file = await this.sink.openFile(path);
    const writer = this.format.open(this.schema, file.stream, this.formatOptions);
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

  /** Finishes the open file and commits every file; returns them for the manifest. */
  async finish(): Promise<ManifestFile[]> {
    await this.roll();
    const out: ManifestFile[] = [];
    for (const f of this.done) {
      const { bytes, sha256 } = await f.file.commit();
      out.push({ table: this.schema.name, path: f.path, rows: f.writer.rowsWritten, bytes, sha256 });
    }
    return out;
  }

  async abort(): Promise<void> {
    const all = this.current ? [...this.done, this.current] : this.done;
    this.current = undefined;
    await Promise.allSettled(all.map((f) => f.file.abort()));
  }
}
