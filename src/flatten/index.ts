/**
 * Flattening: API records -> rows of flat scalars, per table. Pure: no streams, no IO.
 *
 *   compileFlattener(spec: ResourceSpec): Flattener        compile once per resource per run
 *   flattener.tables: TableSchema[]                        parent table first, then child tables
 *   flattener.flattenBatch(records, ctx): Map<table, Row[]> every table of the resource is a key
 *   flattener.drift(): Map<table, Set<string>>             undeclared column names seen so far
 *   convertDatetime(v), localToUtc(localMs, zone)          the datetime rules, exported for reuse
 *
 * Rows list declared columns in schema order (META columns included, `_extra` never set here),
 * then undeclared (drift) columns as extra keys; writers decide where those go (NDJSON: own
 * keys; CSV/Parquet: the `_extra` JSON column). Rules: docs/flattening.md.
 */
import { ExportError } from '../errors.ts';
import { tableSchemas } from '../resources/schema.ts';
import type { ChildSpec, ResourceSpec } from '../resources/types.ts';
import type { Row, TableSchema } from '../table.ts';
import { compileShape, type CompiledShape } from './compile.ts';
import { normalizeIso } from './datetime.ts';

export interface FlattenContext {
  schoolId: string;
  region: string;
  runId: string;
  /** ISO 8601 instant; normalised to microseconds + Z once per batch. */
  extractedAt: string;
}

export interface Flattener {
  tables: TableSchema[];
  flattenBatch(records: readonly unknown[], ctx: FlattenContext): Map<string, Row[]>;
  /**
   * The row of one included item (child `index` of the spec) under parent id `parentId`: exactly
   * what flattenBatch makes of it, drift recorded. For the generated serialisers' per-task memo.
   */
  childRow(index: number, item: unknown, parentId: string | null, ctx: FlattenContext): Row;
  drift(): Map<string, Set<string>>;
}

/** The columns every row of a task carries: school, region, run and extraction time. */
export function meta(ctx: FlattenContext): Row {
  const at = normalizeIso(ctx.extractedAt);
  if (!at) throw new ExportError('E_INTERNAL', `extractedAt must be an ISO 8601 instant, got ${JSON.stringify(ctx.extractedAt)}`);
  return { _school_id: ctx.schoolId, _region: ctx.region, _run_id: ctx.runId, _extracted_at: at };
}

function asRecord(r: unknown, table: string): Record<string, unknown> {
  if (typeof r !== 'object' || r === null || Array.isArray(r)) {
    throw new ExportError('E_PROTOCOL', `a ${table} record is not a JSON object (got ${r === null ? 'null' : typeof r})`);
  }
  return r as Record<string, unknown>;
}

/** The parent id children rows carry: the record's id as text, or null. */
export function parentIdOf(rec: Record<string, unknown>): string | null {
  return typeof rec.id === 'string' || typeof rec.id === 'number' ? String(rec.id) : null;
}

/** Items of an include as found in a record: `{ data: [...] }` (also a bare array, defensively). */
export function includeItems(v: unknown): unknown[] {
  if (Array.isArray(v)) return v;
  if (v && typeof v === 'object' && Array.isArray((v as { data?: unknown }).data)) return (v as { data: unknown[] }).data;
  if (v && typeof v === 'object' && (v as { data?: unknown }).data && typeof (v as { data?: unknown }).data === 'object') {
    return [(v as { data: unknown }).data]; // a to-one include: `{ data: {...} }`
  }
  return [];
}

/**
 * The compiled shapes of a resource's records and included items: built once per resource (specs
 * are data, never changed), not per task. At thousands of schools, building them for each task
 * was about 0.15 ms a task.
 */
const shapes = new WeakMap<ResourceSpec, { parent: CompiledShape; children: { spec: ChildSpec; shape: CompiledShape }[] }>();

function shapesOf(spec: ResourceSpec): { parent: CompiledShape; children: { spec: ChildSpec; shape: CompiledShape }[] } {
  let s = shapes.get(spec);
  if (!s) {
    s = {
      parent: compileShape(spec.fields),
      children: (spec.children ?? []).map((c) => ({
        spec: c,
        shape: compileShape(
          c.columns.filter((f) => f.path !== c.parentKey),
          { [c.parentKey]: null },
        ),
      })),
    };
    shapes.set(spec, s);
  }
  return s;
}

export function compileFlattener(spec: ResourceSpec): Flattener {
  const tables = tableSchemas(spec);
  const { parent, children } = shapesOf(spec);
  const skip = new Set(children.map((c) => c.spec.include));
  const drift = new Map<string, Set<string>>(tables.map((t) => [t.name, new Set<string>()]));
  const parentDrift = drift.get(spec.name)!;
  const prepare = spec.prepare;

  const childDrift = children.map((c) => drift.get(c.spec.table)!);
  const fillChild = (i: number, item: unknown, parentId: string | null, template: Row): Row => {
    const c = children[i]!;
    const crow: Row = { ...template };
    crow[c.spec.parentKey] = parentId;
    if (typeof item === 'object' && item !== null && !Array.isArray(item)) {
      c.shape.fill(item as Record<string, unknown>, crow, childDrift[i]!);
    } else {
      crow.id = typeof item === 'string' || typeof item === 'number' ? String(item) : null; // include of bare ids
    }
    return crow;
  };
  // one set of child templates per context (a task's): a memo miss must not rebuild them
  let lastCtx: FlattenContext | undefined;
  let lastTemplates: Row[] = [];
  const templatesFor = (ctx: FlattenContext): Row[] => {
    if (ctx !== lastCtx) {
      const m = meta(ctx);
      lastTemplates = children.map((c) => ({ ...c.shape.template, ...m }));
      lastCtx = ctx;
    }
    return lastTemplates;
  };

  return {
    tables,
    drift: () => drift,
    childRow: (index, item, parentId, ctx) => fillChild(index, item, parentId, templatesFor(ctx)[index]!),
    flattenBatch(records, ctx) {
      const m = meta(ctx);
      // One template per batch with the metadata filled in: per record only a shallow copy.
      const parentTemplate: Row = { ...parent.template, ...m };
      const childTemplates = children.map((c) => ({ ...c.shape.template, ...m }));
      const out = new Map<string, Row[]>(tables.map((t) => [t.name, []]));
      const parentRows = out.get(spec.name)!;
      for (const raw of records) {
        let rec = asRecord(raw, spec.name);
        if (prepare) rec = prepare(rec);
        const row: Row = { ...parentTemplate };
        parent.fill(rec, row, parentDrift, skip);
        parentRows.push(row);
        for (let i = 0; i < children.length; i++) {
          const c = children[i];
          const items = includeItems(rec[c.spec.include]);
          if (items.length === 0) continue;
          const rows = out.get(c.spec.table)!;
          const parentId = parentIdOf(rec);
          for (const item of items) rows.push(fillChild(i, item, parentId, childTemplates[i]!));
        }
      }
      return out;
    },
  };
}

export { convertDatetime, normalizeIso, isDatetimeObject } from './datetime.ts';
export { localToUtc, isKnownZone } from './zones.ts';
