/**
 * Per-task memo of included items (a school's students and employees come back embedded in
 * every achievement that names them: ~140 times each in a 25,000-row school). Each distinct item
 * is flattened and encoded once by the reference path, its undeclared fields (`_extra`) folded
 * once; later occurrences reuse that encoding when the item is equal to the remembered one in
 * every key, value and key order (checked on each hit by a comparator compiled for the item's
 * shape, same-shape.ts, so a changed item is never served stale). The only per-occurrence part
 * of a child row is the parent id, which is the table's first column: the memo keeps the row's
 * encoding after it as bytes (UTF-8 text, or Parquet values), copied per occurrence.
 */
import type { ColumnsOut, TextOut } from './outputs.ts';
import type { EncoderKind } from './record-code.ts';
import { sameAsFor, type SameAs } from './same-shape.ts';
import { csvCell, csvEncoder } from '../format/csv.ts';
import { declaredColumns, extraJson } from '../format/extra.ts';
import { ndjsonSerializer } from '../format/ndjson.ts';
import type { ColumnBuilder } from '../format/parquet/column.ts';
import { appendValue, parquetColumns } from '../format/parquet/writer.ts';
import { isoMicros } from '../format/parquet/values.ts';
import { EXTRA_COLUMN, type ColumnType, type Row, type Scalar, type TableSchema } from '../table.ts';

export { sameJson } from './same-shape.ts';

/** Per task: a worker's heap is capped, and a school has a few hundred people, not thousands. */
const MAX_ENTRIES = 5_000;

/**
 * A Parquet value of a memoised row, ready to append: a number, a boolean, or null; for a text
 * column (BYTE_ARRAY) the offset in the entry's `text` where its UTF-8 bytes end (they start
 * where the previous text cell's end).
 */
type Cell = number | boolean | null;

interface Entry {
  src: unknown;
  same: SameAs;
  /** text formats: the UTF-8 bytes of the line after the parent id's field */
  rest?: Buffer;
  /** parquet: each column's value after the parent id's, `_extra` last */
  cells?: Cell[];
  /** parquet: the text cells' UTF-8 bytes, one after the other */
  text?: Buffer;
}

/**
 * UTF-8 bytes in a buffer of their own, exactly their size. A memo keeps thousands (a school's
 * people, per task); Buffer.from() would cut each from Node's shared 8 KB pool, so a memo entry
 * would keep a whole pool block alive with whatever short-lived bytes shared it.
 */
function ownUtf8(s: string): Buffer {
  const b = Buffer.allocUnsafeSlow(Buffer.byteLength(s));
  b.write(s);
  return b;
}

export class ChildMemo {
  private readonly entries = new Map<unknown, Entry>();
  private readonly prefix: string;
  /** `{"<parent key>":` for NDJSON lines, built once */
  private readonly keyHead: string;
  private readonly line: ((r: Row) => string) | undefined;
  private readonly cols: { name: string; type: ColumnType }[];
  private readonly isDeclared: Set<string>;
  /** the head of the last parent's child rows (consecutive occurrences share their parent) */
  private lastParent: string | null | undefined;
  private lastHead = '';

  constructor(
    private readonly format: EncoderKind,
    private readonly schema: TableSchema,
    private readonly parentKey: string,
    private readonly guard: boolean,
    private readonly flatten: (item: unknown) => Row,
  ) {
    this.cols = parquetColumns(schema);
    if (this.cols.findIndex((c) => c.name === parentKey) !== 0)
      throw new Error(`encode: ${schema.name}.${parentKey} must be the first column`);
    this.isDeclared = declaredColumns(schema).isDeclared;
    this.isDeclared.add(EXTRA_COLUMN.name);
    this.keyHead = '{' + JSON.stringify(parentKey) + ':';
    if (format === 'ndjson') {
      const ser = ndjsonSerializer(schema);
      this.line = (r) => ser(r) + '\n';
      this.prefix = '{' + JSON.stringify(parentKey) + ':null';
    } else if (format === 'csv') {
      this.line = csvEncoder(schema, guard).line;
      this.prefix = ''; // a null parent id is an empty field
    } else {
      this.line = undefined;
      this.prefix = '';
    }
  }

  /** Appends the child row of `item` under `parentId` to `out`. */
  encode(item: unknown, parentId: string | null, out: TextOut | ColumnsOut): void {
    const id = (item as { id?: unknown } | null)?.id;
    const key = typeof item === 'object' && !Array.isArray(item) && (typeof id === 'string' || typeof id === 'number') ? id : undefined;
    let e = key === undefined ? undefined : this.entries.get(key);
    if (e === undefined || !e.same(e.src, item)) {
      e = this.build(item);
      if (key !== undefined && e !== undefined) {
        if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
        this.entries.set(key, e);
      }
      if (e === undefined) return this.direct(item, parentId, out);
    }
    if (this.format === 'parquet') return this.appendColumns(e.cells!, e.text!, parentId, out as ColumnsOut);
    const o = out as TextOut;
    o.text(this.head(parentId));
    o.bytes(e.rest!);
    o.end();
  }

  /** The row's text before the memoised part: the parent id's field (NDJSON: with the line's opening). */
  private head(parentId: string | null): string {
    if (parentId !== this.lastParent) {
      this.lastParent = parentId;
      this.lastHead =
        this.format === 'ndjson' ? this.keyHead + JSON.stringify(parentId) : csvCell(parentId, this.schema.columns[0]!, this.guard);
    }
    return this.lastHead;
  }

  private build(item: unknown): Entry | undefined {
    const row = this.flatten(item);
    const same = sameAsFor(item);
    if (this.format === 'parquet') return { src: item, same, ...this.cellsOf(row) };
    const line = this.line!(row);
    // the reference line with a null parent id: everything after that field is the item's own
    if (!line.startsWith(this.prefix)) return undefined;
    return { src: item, same, rest: ownUtf8(line.slice(this.prefix.length)) };
  }

  /** The row's Parquet values after the parent id, converted once (appendValue's rules, checked the same way). */
  private cellsOf(row: Row): { cells: Cell[]; text: Buffer } {
    const cells: Cell[] = [];
    const texts: string[] = [];
    let end = 0;
    const textCell = (t: string) => {
      texts.push(t);
      end += Buffer.byteLength(t);
      cells.push(end);
    };
    const n = this.cols.length - 1;
    for (let i = 1; i < n; i++) {
      const { name, type } = this.cols[i]!;
      const v = row[name] as Scalar | undefined;
      if (v === null || v === undefined) cells.push(null);
      else if (type === 'timestamp' && typeof v === 'string' && !Number.isNaN(isoMicros(v))) cells.push(isoMicros(v));
      else if ((type === 'integer' && typeof v === 'number' && Number.isSafeInteger(v)) || (type === 'double' && typeof v === 'number'))
        cells.push(v);
      else if (type === 'boolean') cells.push(v === true || v === 'true');
      else if (type === 'string' || type === 'json') textCell(typeof v === 'string' ? v : String(v));
      else appendValue(undefined as never, v, type, name); // a value of the wrong type: the writer's own error
    }
    const extra = extraJson(row, this.isDeclared);
    if (extra === null) cells.push(null);
    else textCell(extra);
    // each text written on its own (joined first, a lone surrogate could pair with its neighbour)
    const text = Buffer.allocUnsafeSlow(end);
    let at = 0;
    for (const t of texts) at += text.write(t, at);
    return { cells, text };
  }

  /** No memo possible (no id, or an unusual first field): the reference row, this once. */
  private direct(item: unknown, parentId: string | null, out: TextOut | ColumnsOut): void {
    const row = this.flatten(item);
    row[this.parentKey] = parentId;
    if (this.format === 'parquet') {
      const { cells, text } = this.cellsOf(row);
      this.appendColumns(cells, text, parentId, out as ColumnsOut);
    } else (out as TextOut).line(this.line!(row));
  }

  private appendColumns(cells: Cell[], text: Buffer, parentId: string | null, out: ColumnsOut): void {
    const b: ColumnBuilder[] = out.builders;
    if (parentId === null) b[0]!.null();
    else b[0]!.string(parentId);
    let start = 0;
    for (let i = 0; i < cells.length; i++) {
      const c = cells[i]!;
      const col = b[i + 1]!;
      if (c === null) col.null();
      else if (col.physical === 'BYTE_ARRAY') {
        col.utf8Range(text, start, c as number);
        start = c as number;
      } else if (typeof c === 'number') {
        if (col.physical === 'DOUBLE') col.double(c);
        else col.int64(c);
      } else col.boolean(c);
    }
    out.rows++;
  }
}
