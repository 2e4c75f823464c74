/**
 * Turns one task's pages of parsed records into encoded rows per table (format/chunk.ts), the
 * fast way where it can and the reference way where it must:
 *  - parent rows through the resource's generated serialiser (record-code.ts);
 *  - included students/employees through a per-task memo (child-memo.ts): each distinct item is
 *    flattened and encoded once, then reused when the same item (compared in full) comes again;
 *  - any record the generated code refuses (drift, a mismatched type, an unusual datetime) through
 *    the reference flattener and the writers' own row encoders, in place, so row order is kept.
 * One instance per task: drift sets and the memo belong to the task. Pure (no I/O): the same code
 * runs on the main thread (`--workers 0`) and in worker threads.
 */
import { compileFlattener, includeItems, parentIdOf, type FlattenContext, type Flattener } from '../flatten/index.ts';
import type { EncodedChunk } from '../format/chunk.ts';
import { csvEncoder } from '../format/csv.ts';
import { declaredColumns, extraJson } from '../format/extra.ts';
import { ndjsonSerializer } from '../format/ndjson.ts';
import { appendValue, parquetColumns } from '../format/parquet/writer.ts';
import type { FormatOptions } from '../format/types.ts';
import type { ResourceSpec } from '../resources/types.ts';
import { EXTRA_COLUMN, type Row, type TableSchema } from '../table.ts';
import { ChildMemo } from './child-memo.ts';
import { ColumnsOut, TextOut } from './outputs.ts';
import { compileRecordEncoder, type ColumnRecordEncoder, type EncoderKind, type TextRecordEncoder } from './record-code.ts';

export interface EncodedPage {
  /** Every table of the resource that got rows from this page, parent first. */
  tables: { table: string; chunk: EncodedChunk }[];
  records: number;
}

export interface PageEncoderOptions {
  spec: ResourceSpec;
  format: EncoderKind;
  formatOptions: FormatOptions;
  ctx: FlattenContext;
}

/**
 * Whether pages of this resource can be encoded here rather than as rows: not for gzip NDJSON
 * (the gzip stream needs the writer), parquetjs-lite (it takes rows), resources that reshape
 * records first (`prepare`) or whose rows the pipeline reads back (deletions).
 */
export function canEncode(spec: ResourceSpec, format: string, opts: FormatOptions): format is EncoderKind {
  if (format !== 'ndjson' && format !== 'csv' && format !== 'parquet') return false;
  if (format === 'parquet' && opts.parquetWriter === 'parquetjs-lite') return false;
  return spec.prepare === undefined && spec.name !== 'deletions';
}

/** Compiled once per resource and format; `forTask` is cheap. */
export interface CompiledResource {
  forTask(ctx: FlattenContext): PageEncoder;
}

type TableEnc = {
  schema: TableSchema;
  /** reference encoding of one flattened row into this table's output */
  row: (row: Row) => void;
  out: TextOut | ColumnsOut;
};

export function compileResource(spec: ResourceSpec, format: EncoderKind, opts: FormatOptions): CompiledResource {
  const guard = opts.csvFormulaGuard === true;
  const schemas = compileFlattener(spec).tables;
  const parentCode = compileRecordEncoder(spec, schemas[0]!, format, guard);
  return {
    forTask(ctx) {
      return new PageEncoder(spec, format, guard, schemas, parentCode, ctx);
    },
  };
}

export class PageEncoder {
  readonly flattener: Flattener;
  private readonly tables: TableEnc[];
  private readonly encodeParent: TextRecordEncoder | ColumnRecordEncoder;
  private readonly memos: ChildMemo[];

  constructor(
    private readonly spec: ResourceSpec,
    private readonly format: EncoderKind,
    guard: boolean,
    schemas: TableSchema[],
    parentCode: ReturnType<typeof compileRecordEncoder>,
    private readonly ctx: FlattenContext,
  ) {
    this.flattener = compileFlattener(spec);
    this.tables = schemas.map((schema) => tableEncoder(schema, format, guard));
    const meta = metaOf(this.flattener, ctx);
    this.encodeParent = parentCode({ meta });
    this.memos = (spec.children ?? []).map((c, i) => {
      const t = this.tables[i + 1]!;
      return new ChildMemo(format, t.schema, c.parentKey, guard, (item) => this.flattener.childRow(i, item, null, ctx));
    });
  }

  /** Drift seen by this task so far (undeclared columns per table). */
  drift(): Map<string, Set<string>> {
    return this.flattener.drift();
  }

  encode(records: readonly unknown[]): EncodedPage {
    const parent = this.tables[0]!;
    const children = this.spec.children ?? [];
    const text = this.format !== 'parquet';
    for (const raw of records) {
      const rec = raw as Record<string, unknown>;
      let ok: boolean;
      if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) ok = false;
      else if (text) {
        const line = (this.encodeParent as TextRecordEncoder)(rec);
        ok = line !== null;
        if (ok) (parent.out as TextOut).line(this.format === 'ndjson' ? line + '\n' : line!);
      } else {
        const out = parent.out as ColumnsOut;
        ok = (this.encodeParent as ColumnRecordEncoder)(rec, out.builders);
        if (ok) out.rows++;
      }
      if (!ok) {
        this.reference(rec);
        continue;
      }
      if (children.length === 0) continue;
      const parentId = parentIdOf(rec);
      for (let i = 0; i < children.length; i++) {
        const items = includeItems(rec[children[i]!.include]);
        if (items.length === 0) continue;
        const memo = this.memos[i]!;
        const out = this.tables[i + 1]!.out;
        for (const item of items) memo.encode(item, parentId, out);
      }
    }
    const tables: EncodedPage['tables'] = [];
    for (const t of this.tables) if (t.out.rows > 0) tables.push({ table: t.schema.name, chunk: t.out.take() });
    return { tables, records: records.length };
  }

  /** The reference path for one record: flatten, then each table's own row encoder. */
  private reference(rec: unknown): void {
    const rows = this.flattener.flattenBatch([rec], this.ctx);
    for (const t of this.tables) for (const row of rows.get(t.schema.name) ?? []) t.row(row);
  }
}

/** The metadata columns' values for a task, as the flattener writes them. */
function metaOf(flattener: Flattener, ctx: FlattenContext): Row {
  const row = flattener.flattenBatch([{}], ctx).get(flattener.tables[0]!.name)![0]!;
  return { _school_id: row._school_id!, _region: row._region!, _run_id: row._run_id!, _extracted_at: row._extracted_at! };
}

function tableEncoder(schema: TableSchema, format: EncoderKind, guard: boolean): TableEnc {
  if (format === 'ndjson') {
    const out = new TextOut();
    const ser = ndjsonSerializer(schema);
    return { schema, out, row: (r) => out.line(ser(r) + '\n') };
  }
  if (format === 'csv') {
    const out = new TextOut();
    const enc = csvEncoder(schema, guard);
    return { schema, out, row: (r) => out.line(enc.line(r)) };
  }
  const cols = parquetColumns(schema);
  const out = new ColumnsOut(cols);
  const isDeclared = declaredColumns(schema).isDeclared;
  isDeclared.add(EXTRA_COLUMN.name);
  const n = cols.length - 1;
  return {
    schema,
    out,
    row: (r) => {
      const b = out.builders;
      for (let i = 0; i < n; i++) appendValue(b[i]!, r[cols[i]!.name], cols[i]!.type, cols[i]!.name);
      const extra = extraJson(r, isDeclared);
      if (extra === null) b[n]!.null();
      else b[n]!.string(extra);
      out.rows++;
    },
  };
}
