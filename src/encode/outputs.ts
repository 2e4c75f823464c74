import type { ColumnsChunk, TextChunk } from '../format/chunk.ts';
import { ColumnBuilder } from '../format/parquet/column.ts';
import type { ParquetColumn } from '../format/parquet/file.ts';
import { PHYSICAL } from '../format/parquet/file.ts';

/**
 * One table's rows of a page as they are encoded: text lines appended straight into UTF-8 bytes
 * (with where each row ends), or Parquet columns. take() hands over the very buffers written
 * (their own, never Node's shared pool, so they can be transferred to another thread): nothing is
 * copied, and nothing page-sized stays behind between pages; the next page starts in buffers sized
 * like this one's.
 */
export class TextOut {
  private buf: Buffer;
  private used = 0;
  private ends: Uint32Array;
  rows = 0;

  constructor(
    private expectedBytes = 64 * 1024,
    private expectedRows = 1024,
  ) {
    this.buf = Buffer.allocUnsafeSlow(expectedBytes);
    this.ends = new Uint32Array(expectedRows);
  }

  line(text: string): void {
    this.text(text);
    this.end();
  }

  /** Part of a row, as text. */
  text(text: string): void {
    this.reserve(text.length * 3); // bounds UTF-8 (a surrogate pair: 4 bytes for 2 units)
    this.used += this.buf.write(text, this.used);
  }

  /** Part of a row, already UTF-8 (a memo's cached encoding: copied, not encoded again). */
  bytes(b: Uint8Array): void {
    this.reserve(b.length);
    this.buf.set(b, this.used);
    this.used += b.length;
  }

  private reserve(need: number): void {
    if (this.used + need > this.buf.length) {
      const next = Buffer.allocUnsafeSlow(Math.max(this.buf.length * 2, this.used + need));
      this.buf.copy(next, 0, 0, this.used);
      this.buf = next;
    }
  }

  /** Ends the row written since the last end. */
  end(): void {
    if (this.rows === this.ends.length) {
      const next = new Uint32Array(this.ends.length * 2);
      next.set(this.ends);
      this.ends = next;
    }
    this.ends[this.rows++] = this.used;
  }

  take(): TextChunk {
    const chunk: TextChunk = {
      kind: 'text',
      rows: this.rows,
      bytes: this.buf.subarray(0, this.used),
      ends: this.ends.subarray(0, this.rows),
    };
    // pages of a table are alike: the next starts with room for this one and an eighth more
    this.expectedBytes = Math.max(4096, Math.ceil(this.used * 1.125));
    this.expectedRows = Math.max(64, Math.ceil(this.rows * 1.125));
    this.buf = Buffer.allocUnsafeSlow(this.expectedBytes);
    this.ends = new Uint32Array(this.expectedRows);
    this.used = 0;
    this.rows = 0;
    return chunk;
  }
}

export class ColumnsOut {
  readonly builders: ColumnBuilder[];
  rows = 0;
  constructor(columns: ParquetColumn[]) {
    this.builders = columns.map((c) => new ColumnBuilder(PHYSICAL[c.type]));
  }

  take(): ColumnsChunk {
    const chunk: ColumnsChunk = { kind: 'columns', rows: this.rows, columns: this.builders.map((b) => b.take()) };
    this.rows = 0;
    return chunk;
  }
}
