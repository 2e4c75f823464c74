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
import { replaceLoneSurrogates, valuesOverLimits, type OverLimit, type SurrogateScope } from '../decode/index.ts';
import { compileFlattener, includeItems, meta, parentIdOf, type FlattenContext, type Flattener } from '../flatten/index.ts';
import type { EncodedChunk } from '../format/chunk.ts';
import { csvEncoder } from '../format/csv.ts';
import { declaredColumns, extraJson } from '../format/extra.ts';
import { ndjsonSerializer } from '../format/ndjson.ts';
import { appendValue, parquetColumns } from '../format/parquet/writer.ts';
import type { FormatOptions } from '../format/types.ts';
import type { ResourceSpec } from '../resources/types.ts';
import { EXTRA_COLUMN, type Row, type TableSchema } from '../table.ts';
import { CONVERTERS, MISMATCH } from '../flatten/convert.ts';
import { ChildMemo } from './child-memo.ts';
import { ColumnsOut, TextOut } from './outputs.ts';
import {
  compileRecordEncoder,
  driftKeyCompiles,
  type ColumnRecordEncoder,
  type EncoderKind,
  type TextRecordEncoder,
} from './record-code.ts';

export interface EncodedPage {
  /** Every table of the resource that got rows from this page, parent first. */
  tables: { table: string; chunk: EncodedChunk }[];
  records: number;
  /** The parent rows' key values as written (String of the column value), when asked for. */
  keys?: string[];
  /** Undeclared columns first seen on this page, per table (the task's drift grows by these). */
  drift?: [string, string[]][];
  /** Lone surrogates replaced by U+FFFD in this page's rows, per table. */
  replaced?: [string, number][];
  /** Values (or rows) over a documented loader's limit (decode/loader-limits.ts). */
  overLimit?: OverLimit[];
}

/**
 * Whether pages of this resource can be encoded here rather than as rows: not for parquetjs-lite
 * (it takes rows), resources that reshape records first (`prepare`), whose rows the pipeline
 * reads back (deletions) or whose key is not a declared top-level scalar (snapshot id lists).
 */
export function canEncode(spec: ResourceSpec, format: string, opts: FormatOptions): format is EncoderKind {
  if (format !== 'ndjson' && format !== 'csv' && format !== 'parquet') return false;
  if (format === 'parquet' && opts.parquetWriter === 'parquetjs-lite') return false;
  // snapshot id lists need the key's text as the flattened row has it: a declared top-level scalar
  const key = spec.key.length === 1 ? spec.fields.find((f) => f.path === spec.key[0]) : undefined;
  return spec.prepare === undefined && spec.name !== 'deletions' && key !== undefined && key.type !== 'datetime';
}

/** Compiled once per resource and format; `forTask` is cheap. */
export interface CompiledResource {
  forTask(ctx: FlattenContext): PageEncoder;
}

type ParentCode = ReturnType<typeof compileRecordEncoder>;

/** Different undeclared-field layouts compiled per resource at most: beyond, records with a new one take the reference path. */
const MAX_DRIFT_LAYOUTS = 16;

type TableEnc = {
  schema: TableSchema;
  /** reference encoding of one flattened row into this table's output */
  row: (row: Row) => void;
  out: TextOut | ColumnsOut;
};

export function compileResource(spec: ResourceSpec, format: EncoderKind, opts: FormatOptions): CompiledResource {
  const guard = opts.csvFormulaGuard === true;
  const schemas = compileFlattener(spec).tables;
  // one parent encoder per layout of undeclared fields met (none: the declared fields only), shared by tasks
  const layouts = new Map<string, ParentCode | null>();
  const parentCode = (driftKeys: readonly string[]): ParentCode | null => {
    const key = JSON.stringify(driftKeys);
    let code = layouts.get(key);
    if (code === undefined) {
      code = layouts.size < MAX_DRIFT_LAYOUTS ? compileRecordEncoder(spec, schemas[0]!, format, guard, driftKeys) : null;
      layouts.set(key, code);
    }
    return code;
  };
  return {
    forTask(ctx) {
      return new PageEncoder(spec, format, guard, schemas, parentCode, ctx);
    },
  };
}

/** A task's parent encoder for one layout of undeclared fields, and which columns its drift produced. */
interface ParentLayout {
  encode: TextRecordEncoder | ColumnRecordEncoder;
  driftKeys: readonly string[];
  seen: Uint8Array;
}

export class PageEncoder {
  readonly flattener: Flattener;
  private readonly tables: TableEnc[];
  /** the layout the last record took (most records of a task share one) */
  private parent: ParentLayout;
  private readonly layouts = new Map<string, ParentLayout | null>();
  /** top-level keys the resource declares (includes too): the rest of a record's keys are drift */
  private readonly declared: Set<string>;
  private readonly memos: ChildMemo[];
  private readonly surrogates: SurrogateScope;

  constructor(
    private readonly spec: ResourceSpec,
    private readonly format: EncoderKind,
    guard: boolean,
    schemas: TableSchema[],
    private readonly parentCode: (driftKeys: readonly string[]) => ParentCode | null,
    private readonly ctx: FlattenContext,
  ) {
    this.flattener = compileFlattener(spec);
    this.tables = schemas.map((schema) => tableEncoder(schema, format, guard));
    this.parent = this.layout([])!;
    this.declared = new Set([...spec.fields.map((f) => f.path.split('.')[0]!), ...(spec.children ?? []).map((c) => c.include)]);
    this.surrogates = surrogateScope(spec);
    this.memos = (spec.children ?? []).map((c, i) => {
      const t = this.tables[i + 1]!;
      return new ChildMemo(format, t.schema, c.parentKey, guard, (item) => this.flattener.childRow(i, item, null, ctx));
    });
  }

  /** The task's encoder for records whose undeclared fields are `driftKeys`, in that order (null: none possible). */
  private layout(driftKeys: readonly string[]): ParentLayout | null {
    const key = JSON.stringify(driftKeys);
    let l = this.layouts.get(key);
    if (l === undefined) {
      const code = this.parentCode(driftKeys);
      const seen = new Uint8Array(driftKeys.length);
      l = code ? { encode: code({ meta: meta(this.ctx) }, seen), driftKeys, seen } : null;
      this.layouts.set(key, l);
    }
    return l;
  }

  /**
   * Encodes a parent record by generated code: the layout of the last record, else the one its
   * undeclared fields call for (compiled when first met: learned from the task's first page, and
   * again whenever a new undeclared field arrives). False: the reference path must take it.
   */
  private encodeParent(rec: Record<string, unknown>): boolean {
    if (this.tryParent(this.parent, rec)) return true;
    const drift: string[] = [];
    for (const k in rec) {
      if (this.declared.has(k)) continue;
      // undefined (hand-made records, not JSON) is skipped by the reference path: leave those to it
      if (!driftKeyCompiles(k) || rec[k] === undefined) return false;
      drift.push(k);
    }
    const l = this.layout(drift);
    if (l === null || l === this.parent || !this.tryParent(l, rec)) return false;
    this.parent = l;
    return true;
  }

  private tryParent(l: ParentLayout, rec: Record<string, unknown>): boolean {
    if (this.format === 'parquet') {
      const out = this.tables[0]!.out as ColumnsOut;
      if (!(l.encode as ColumnRecordEncoder)(rec, out.builders)) return false;
      out.rows++;
      return true;
    }
    const line = (l.encode as TextRecordEncoder)(rec);
    if (line === null) return false;
    (this.tables[0]!.out as TextOut).line(this.format === 'ndjson' ? line + '\n' : line);
    return true;
  }

  /** Columns the generated code's drift produced: into the task's drift set, as the flattener records its own. */
  private noteDrift(): void {
    const set = this.flattener.drift().get(this.spec.name)!;
    for (const l of this.layouts.values()) {
      if (!l) continue;
      for (let i = 0; i < l.driftKeys.length; i++) {
        const s = l.seen[i]!;
        if (s & 1) set.add(l.driftKeys[i]!);
        if (s & 2) set.add(`${l.driftKeys[i]}__timezone`);
      }
    }
  }

  private keyConv: { field: string; conv: (v: unknown) => string } | undefined;

  /** Built once per task (its key field does not change between pages). */
  private keyConverterFor(field: string): (v: unknown) => string {
    if (this.keyConv?.field !== field) this.keyConv = { field, conv: keyConverter(this.spec, field) };
    return this.keyConv.conv;
  }

  /** Drift seen by this task so far (undeclared columns per table). */
  drift(): Map<string, Set<string>> {
    return this.flattener.drift();
  }

  /**
   * Encodes one page. With `keyField`, also the key column's value of each parent row as text,
   * exactly as the reference path reads it from the flattened row (String of the converted value).
   */
  encode(records: readonly unknown[], keyField?: string): EncodedPage {
    const replaced = new Map<string, number>();
    replaceLoneSurrogates(records, this.surrogates, replaced); // nothing to do on a page marked clean
    const overLimit: OverLimit[] = [];
    valuesOverLimits(records, this.surrogates, overLimit); // nothing to do on a page smaller than the limits
    const keys: string[] | undefined = keyField === undefined ? undefined : [];
    const keyConv = keyField === undefined ? undefined : this.keyConverterFor(keyField);
    const children = this.spec.children ?? [];
    for (const raw of records) {
      const rec = raw as Record<string, unknown>;
      const ok = typeof raw === 'object' && raw !== null && !Array.isArray(raw) && this.encodeParent(rec);
      if (!ok) {
        const row = this.reference(rec);
        keys?.push(String(row[keyField!]));
        continue;
      }
      keys?.push(keyConv!(rec[keyField!]));
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
    this.noteDrift();
    const page: EncodedPage = { tables, records: records.length };
    if (keys) page.keys = keys;
    const drift = this.newDrift();
    if (drift.length) page.drift = drift;
    if (replaced.size) page.replaced = [...replaced];
    if (overLimit.length) page.overLimit = overLimit;
    return page;
  }

  private readonly driftSent = new Map<string, number>();

  /** Drift names added since the last call (Sets keep insertion order). */
  private newDrift(): [string, string[]][] {
    const out: [string, string[]][] = [];
    for (const [table, names] of this.flattener.drift()) {
      const sent = this.driftSent.get(table) ?? 0;
      if (names.size > sent) {
        out.push([table, [...names].slice(sent)]);
        this.driftSent.set(table, names.size);
      }
    }
    return out;
  }

  /** The reference path for one record: flatten, then each table's own row encoder. Returns the parent row. */
  private reference(rec: unknown): Row {
    const rows = this.flattener.flattenBatch([rec], this.ctx);
    for (const t of this.tables) for (const row of rows.get(t.schema.name) ?? []) t.row(row);
    return rows.get(this.spec.name)![0]!;
  }
}

/** The key column's text from a raw value, as String(row[key]) of the reference flattener's row. */
function keyConverter(spec: ResourceSpec, keyField: string): (v: unknown) => string {
  const field = spec.fields.find((f) => f.path === keyField && f.type !== 'datetime');
  if (!field) throw new Error(`encode: key ${spec.name}.${keyField} must be a declared top-level scalar field`);
  const conv = CONVERTERS[field.type as Exclude<typeof field.type, 'datetime'>];
  return (v) => {
    if (v === undefined || v === null) return 'null';
    const c = conv(v);
    return c === MISMATCH ? 'null' : String(c);
  };
}

/** The metadata columns' values for a task, as the flattener writes them. */
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

/** Where a resource's lone surrogates are counted: its table, and each include's child table. */
export function surrogateScope(spec: ResourceSpec): SurrogateScope {
  return {
    table: spec.name,
    includes: new Map((spec.children ?? []).map((c) => [c.include, c.table])),
    json: new Set(spec.fields.filter((f) => f.type === 'json' && !f.path.includes('.')).map((f) => f.path)),
  };
}
