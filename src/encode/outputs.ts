import type { ColumnsChunk, TextChunk } from '../format/chunk.ts';
import { ColumnBuilder } from '../format/parquet/column.ts';
import type { ParquetColumn } from '../format/parquet/file.ts';
import { PHYSICAL } from '../format/parquet/file.ts';

/**
 * Scratch buffers of this thread that rows are encoded into, shared by every task's outputs:
 * a page is encoded synchronously, so no more are in use at once than a page has tables. Each
 * output borrows one at its page's first row and gives it back at take(), which copies the rows
 * out at their exact size. Before, each output kept a page-sized buffer of its own between pages
 * (12 at 4 tasks of three tables) and handed over the very buffer written, with the slack of its
 * doublings: both were held in memory while the page waited to be written.
 */
const spare: Buffer[] = []; // smallest first
/** More than any page has tables: beyond, a returned buffer is left to the collector. */
const MAX_SPARE = 8;

/** The largest spare buffer (a page's first table to start, its parent, is its largest), or a new one. */
function borrow(need: number): Buffer {
  const b = spare.at(-1);
  if (b && b.length >= need) return spare.pop()!;
  return Buffer.allocUnsafeSlow(Math.max(need, 64 * 1024));
}

function giveBack(b: Buffer): void {
  if (spare.length >= MAX_SPARE) return;
  let i = spare.length;
  while (i > 0 && spare[i - 1]!.length > b.length) i--;
  spare.splice(i, 0, b);
}

/**
 * One table's rows of a page as they are encoded: text lines appended straight into UTF-8 bytes
 * (with where each row ends), or Parquet columns. take() hands over the rows' bytes in buffers of
 * their own (never Node's shared pool, so they can be transferred to another thread), exactly
 * their size; nothing page-sized stays behind between pages.
 */
export class TextOut {
  private buf: Buffer | undefined;
  private used = 0;
  private ends: Uint32Array;
  rows = 0;

  constructor(expectedRows = 1024) {
    this.ends = new Uint32Array(expectedRows);
  }

  line(text: string): void {
    this.text(text);
    this.end();
  }

  /** Part of a row, as text. */
  text(text: string): void {
    const buf = this.reserve(text.length * 3); // bounds UTF-8 (a surrogate pair: 4 bytes for 2 units)
    this.used += buf.write(text, this.used);
  }

  /** Part of a row, already UTF-8 (a memo's cached encoding: copied, not encoded again). */
  bytes(b: Uint8Array): void {
    const buf = this.reserve(b.length);
    buf.set(b, this.used);
    this.used += b.length;
  }

  private reserve(need: number): Buffer {
    const buf = this.buf;
    if (buf === undefined) return (this.buf = borrow(need));
    if (this.used + need <= buf.length) return buf;
    const next = Buffer.allocUnsafeSlow(Math.max(buf.length * 2, this.used + need));
    buf.copy(next, 0, 0, this.used);
    return (this.buf = next);
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
    const bytes = Buffer.allocUnsafeSlow(this.used);
    if (this.buf) {
      this.buf.copy(bytes, 0, 0, this.used);
      giveBack(this.buf);
      this.buf = undefined;
    }
    const chunk: TextChunk = { kind: 'text', rows: this.rows, bytes, ends: this.ends.slice(0, this.rows) };
    this.used = 0;
    this.rows = 0;
    return chunk;
  }
}

/**
 * Column builders of this thread, per table layout, lent to a page's ColumnsOut from its first row
 * to take() (as TextOut's scratch: a page is encoded synchronously, so one set per table is
 * enough). Before, every task kept a set of its own, sized like its last page, between pages.
 */
const spareColumns = new Map<string, ColumnBuilder[][]>();

export class ColumnsOut {
  private lent: ColumnBuilder[] | undefined;
  private readonly layout: string;
  rows = 0;
  constructor(private readonly columns: ParquetColumn[]) {
    this.layout = columns.map((c) => `${PHYSICAL[c.type]} ${c.name}`).join('\n');
  }

  /** The page's builders, one per column (borrowed at the page's first row). */
  get builders(): ColumnBuilder[] {
    return (this.lent ??= spareColumns.get(this.layout)?.pop() ?? this.columns.map((c) => new ColumnBuilder(PHYSICAL[c.type])));
  }

  take(): ColumnsChunk {
    const builders = this.builders;
    const chunk: ColumnsChunk = { kind: 'columns', rows: this.rows, columns: builders.map((b) => b.take()) };
    this.rows = 0;
    this.lent = undefined;
    let spare = spareColumns.get(this.layout);
    if (!spare) spareColumns.set(this.layout, (spare = []));
    if (spare.length < 2) spare.push(builders);
    return chunk;
  }
}
