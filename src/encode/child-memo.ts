/**
 * Per-task memo of included items (a school's students and employees come back embedded in
 * every achievement that names them: ~140 times each in a 25,000-row school). Each distinct item
 * is flattened and encoded once by the reference path; later occurrences reuse the encoding when
 * the item is equal to the remembered one in every key, value and key order (verified on each
 * hit, so a changed item is never served stale). The only per-occurrence part of a child row is
 * the parent id, which is the table's first column: the memo keeps the row's encoding after it.
 */
import type { ColumnsOut, TextOut } from './outputs.ts';
import type { EncoderKind } from './record-code.ts';
import { csvCell, csvEncoder } from '../format/csv.ts';
import { declaredColumns, extraJson } from '../format/extra.ts';
import { ndjsonSerializer } from '../format/ndjson.ts';
import type { ColumnBuilder } from '../format/parquet/column.ts';
import { appendValue, parquetColumns } from '../format/parquet/writer.ts';
import { EXTRA_COLUMN, type ColumnType, type Row, type Scalar, type TableSchema } from '../table.ts';

/** Per task: a worker's heap is capped, and a school has a few hundred people, not thousands. */
const MAX_ENTRIES = 5_000;

interface Entry {
  src: unknown;
  /** text formats: the line after the parent id's field */
  rest?: string;
  /** parquet: the row (parent id column excluded) and its `_extra` JSON, folded once */
  row?: Row;
  extra?: string | null;
}

/** Deep equality of JSON values, key order included (it decides the order of drift fields). */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    if (a.length !== bb.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i], bb[i])) return false;
    return true;
  }
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  for (let i = 0; i < ka.length; i++) {
    const k = ka[i]!;
    if (k !== kb[i] || !sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])) return false;
  }
  return true;
}

function memoKey(item: unknown): string | undefined {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) return undefined;
  const o = item as { id?: unknown; updated_at?: unknown };
  if (typeof o.id !== 'string' && typeof o.id !== 'number') return undefined;
  const u = o.updated_at as { date?: unknown } | undefined;
  return `${o.id}\u0001${typeof u === 'object' && u !== null && typeof u.date === 'string' ? u.date : ''}`;
}

export class ChildMemo {
  private readonly entries = new Map<string, Entry>();
  private readonly prefix: string;
  /** `{"<parent key>":` for NDJSON lines, built once */
  private readonly keyHead: string;
  private readonly line: ((r: Row) => string) | undefined;
  private readonly cols: { name: string; type: ColumnType }[];
  private readonly isDeclared: Set<string>;

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
    const key = memoKey(item);
    let e = key === undefined ? undefined : this.entries.get(key);
    if (e === undefined || !sameJson(e.src, item)) {
      e = this.build(item);
      if (key !== undefined && e !== undefined) {
        if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
        this.entries.set(key, e);
      }
      if (e === undefined) return this.direct(item, parentId, out);
    }
    if (this.format === 'parquet') this.appendColumns(e, parentId, out as ColumnsOut);
    else {
      const head =
        this.format === 'ndjson' ? this.keyHead + JSON.stringify(parentId) : csvCell(parentId, this.schema.columns[0]!, this.guard);
      (out as TextOut).line(head + e.rest!);
    }
  }

  private build(item: unknown): Entry | undefined {
    const row = this.flatten(item);
    if (this.format === 'parquet') return { src: item, row, extra: extraJson(row, this.isDeclared) };
    const line = this.line!(row);
    // the reference line with a null parent id: everything after that field is the item's own
    if (!line.startsWith(this.prefix)) return undefined;
    return { src: item, rest: line.slice(this.prefix.length) };
  }

  /** No memo possible (no id, or an unusual first field): the reference row, this once. */
  private direct(item: unknown, parentId: string | null, out: TextOut | ColumnsOut): void {
    const row = this.flatten(item);
    row[this.parentKey] = parentId;
    if (this.format === 'parquet')
      this.appendColumns({ src: item, row, extra: extraJson(row, this.isDeclared) }, parentId, out as ColumnsOut);
    else (out as TextOut).line(this.line!(row));
  }

  private appendColumns(e: Entry, parentId: string | null, out: ColumnsOut): void {
    const b: ColumnBuilder[] = out.builders;
    const cols = this.cols;
    const row = e.row!;
    const n = cols.length - 1;
    if (parentId === null) b[0]!.null();
    else b[0]!.string(parentId);
    for (let i = 1; i < n; i++) appendValue(b[i]!, row[cols[i]!.name] as Scalar | undefined, cols[i]!.type, cols[i]!.name);
    if (e.extra === null || e.extra === undefined) b[n]!.null();
    else b[n]!.string(e.extra);
    out.rows++;
  }
}
