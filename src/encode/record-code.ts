import type { FormatName } from '../format/index.ts';
/**
 * Generated per-resource serialisers: JavaScript built once per resource and format that turns a
 * parsed record straight into its NDJSON line, its CSV line, or its Parquet column values,
 * without the flattened Row object in between. Straight-line code with one property read per
 * declared field keeps V8's inline caches monomorphic; value conversion uses the flattener's own
 * converters and the writers' own cell encoders, so the output is the reference path's, byte for
 * byte. Anything off the common shape (an undeclared field, a value that does not fit its type, a
 * datetime not in the API's layout) makes the function return null / false before it wrote
 * anything, and the caller takes the reference path (flatten -> writer) for that record.
 *
 * Undeclared top-level fields (drift) are encoded by generated code too, once the page encoder
 * has learned them (`driftKeys`: their names in the order records carry them): each becomes its
 * own NDJSON key, or a member of the `_extra` JSON, after the declared columns, as the reference
 * path writes them: a scalar as it is, an array as JSON text, a datetime object in the API's
 * layout as `<name>` and `<name>__timezone`. A record whose undeclared fields are not exactly
 * those, in that order, or whose drift value is anything else (a nested object), fails as before.
 */
import { columnName } from '../resources/schema.ts';
import type { FieldSpec, ResourceSpec } from '../resources/types.ts';
import { CONVERTERS, MISMATCH } from '../flatten/convert.ts';
import { apiDatetime, apiDatetimeIso, apiDatetimeMicros, readApiDatetime } from '../flatten/datetime.ts';
import { csvCell, csvText } from '../format/csv.ts';
import type { ColumnBuilder } from '../format/parquet/column.ts';
import { isoMicros } from '../format/parquet/values.ts';
import { EXTRA_COLUMN, META_COLUMNS, type ColumnDef, type Row, type TableSchema } from '../table.ts';

export type EncoderKind = FormatName;

/** Where a column's value comes from. */
type Source = { kind: 'field'; field: FieldSpec; access: string } | { kind: 'zone'; of: string } | { kind: 'meta'; name: string };

interface Node {
  keys: Set<string>;
  /** expression evaluating to this node's object (or undefined/null) */
  expr: string;
  children: Map<string, Node>;
}

const js = (s: string) => JSON.stringify(s);

/** Per-task constants: the metadata columns' encoded values. */
export interface TaskConstants {
  meta: Row;
}

export type TextRecordEncoder = (rec: Record<string, unknown>) => string | null;
export type ColumnRecordEncoder = (rec: Record<string, unknown>, builders: ColumnBuilder[]) => boolean;

/** A datetime object as flattenGeneric recognises one: `date` text, `timezone` and `timezone_type`, nothing else. */
function isDt(v: object): boolean {
  const o = v as { date?: unknown };
  if (typeof o.date !== 'string' || !('timezone' in o) || !('timezone_type' in o)) return false;
  let n = 0;
  for (const _k in o) n++;
  return n === 3;
}

const HELPERS = { MISMATCH, CONVERTERS, readApiDatetime, apiDatetime, apiDatetimeIso, apiDatetimeMicros, csvCell, csvText, isDt };

/** Names drift may take as generated code (not those JavaScript objects order or treat apart). */
export function driftKeyCompiles(k: string): boolean {
  return k !== '__proto__' && !/^(0|[1-9]\d*)$/.test(k);
}

/** Per drift key, which columns it has produced so far (1: `<name>`, 2: also `<name>__timezone`): the task's drift set grows by these. */
export type DriftSeen = { keys: readonly string[]; seen: Uint8Array };

/**
 * Compiles the parent-table encoder of a resource for one format. Returns a factory taking the
 * task's constants (metadata values) and returning the record encoder.
 */
export function compileRecordEncoder(
  spec: ResourceSpec,
  schema: TableSchema,
  kind: EncoderKind,
  guard: boolean,
  driftKeys: readonly string[] = [],
): (k: TaskConstants, seen?: Uint8Array) => TextRecordEncoder | ColumnRecordEncoder {
  const root: Node = { keys: new Set((spec.children ?? []).map((c) => c.include)), expr: 'rec', children: new Map() };
  const nodeDecls: string[] = [];
  const sources = new Map<string, Source>();
  let nodeCount = 0;
  for (const field of spec.fields) {
    const parts = field.path.split('.');
    let node = root;
    for (let i = 0; i < parts.length - 1; i++) {
      node.keys.add(parts[i]!);
      let next = node.children.get(parts[i]!);
      if (!next) {
        next = { keys: new Set(), expr: `n${nodeCount++}`, children: new Map() };
        node.children.set(parts[i]!, next);
      }
      node = next;
    }
    const leaf = parts[parts.length - 1]!;
    node.keys.add(leaf);
    const col = columnName(field.path);
    const access = node === root ? `rec[${js(leaf)}]` : `(${node.expr} == null ? undefined : ${node.expr}[${js(leaf)}])`;
    sources.set(col, { kind: 'field', field, access });
    if (field.type === 'datetime') sources.set(`${col}__timezone`, { kind: 'zone', of: col });
  }
  for (const m of META_COLUMNS) sources.set(m.name, { kind: 'meta', name: m.name });

  // Shape checks: every key of the record and of each declared nested object must be declared.
  const keySets: Set<string>[] = [];
  const checkKeys = (node: Node, obj: string) => {
    keySets.push(node.keys);
    return `for (const k in ${obj}) if (!KEYS[${keySets.length - 1}].has(k)) return FAIL;`;
  };
  const walk = (node: Node, parentExpr: string) => {
    for (const [key, child] of node.children) {
      nodeDecls.push(`const ${child.expr} = ${parentExpr} == null ? undefined : ${parentExpr}[${js(key)}];`);
      nodeDecls.push(
        `if (${child.expr} !== undefined && ${child.expr} !== null) { if (typeof ${child.expr} !== 'object' || Array.isArray(${child.expr})) return FAIL; ${checkKeys(child, child.expr)} }`,
      );
      walk(child, child.expr);
    }
  };
  const body: string[] = [];
  if (driftKeys.length === 0) body.push(checkKeys(root, 'rec'));
  else {
    // declared keys in any order; the undeclared ones exactly the learned ones, in their order
    keySets.push(root.keys);
    body.push(
      `{ let j = 0; for (const k in rec) if (!KEYS[${keySets.length - 1}].has(k)) { if (k !== DK[j]) return FAIL; j++; } if (j !== ${driftKeys.length}) return FAIL; }`,
    );
  }
  walk(root, 'rec');
  body.push(...nodeDecls);

  const columns = schema.columns.filter((c) => c.name !== EXTRA_COLUMN.name);
  const converters: ((v: unknown) => unknown)[] = [];
  const vars: string[] = []; // expression of each column's converted value
  columns.forEach((c, i) => {
    const src = sources.get(c.name);
    if (!src) throw new Error(`encode: no source for column ${schema.name}.${c.name}`);
    if (src.kind === 'meta') {
      vars.push(`K.meta[${js(c.name)}]`);
    } else if (src.kind === 'zone') {
      vars.push(`z_${cols(src.of)}`);
    } else if (src.field.type === 'datetime') {
      const name = cols(c.name);
      const instant = kind === 'parquet' ? 'H.apiDatetimeMicros()' : 'H.apiDatetimeIso()';
      body.push(
        `let t_${name} = null, z_${name} = null;`,
        `{ const v = ${src.access}; if (v !== undefined && v !== null) { if (!H.readApiDatetime(v)) return FAIL; t_${name} = ${instant}; z_${name} = H.apiDatetime.zone; } }`,
      );
      vars.push(`t_${name}`);
    } else {
      converters.push(CONVERTERS[src.field.type]);
      body.push(
        `let c${i} = null;`,
        `{ const v = ${src.access}; if (v !== undefined && v !== null) { c${i} = CONV[${converters.length - 1}](v); if (c${i} === H.MISMATCH) return FAIL; } }`,
      );
      vars.push(`c${i}`);
    }
  });

  // drift: each key's members ('"name":value' pieces), checked and built before anything is written
  driftKeys.forEach((k, i) => {
    const name = js(k);
    const zone = js(`${k}__timezone`);
    body.push(
      `let d${i};`,
      `{ const v = rec[${name}];`,
      `if (v === null || typeof v !== 'object') d${i} = ${js(js(k) + ':')} + JSON.stringify(v), SEEN[${i}] |= 1;`,
      `else if (Array.isArray(v)) d${i} = ${js(js(k) + ':')} + JSON.stringify(JSON.stringify(v)), SEEN[${i}] |= 1;`,
      `else if (H.isDt(v) && H.readApiDatetime(v)) d${i} = ${js(js(k) + ':')} + JSON.stringify(H.apiDatetimeIso()) + ${js(',' + zone + ':')} + JSON.stringify(H.apiDatetime.zone), SEEN[${i}] |= 3;`,
      `else return FAIL; }`,
    );
  });
  const drift = driftKeys.map((_, i) => `d${i}`).join(" + ',' + ");
  if (kind === 'ndjson') {
    const parts = columns.map((c, i) => `${js((i === 0 ? '{' : ',') + js(c.name) + ':')} + JSON.stringify(${vars[i]})`);
    body.push(`return ${parts.join(' + ')}${driftKeys.length ? ` + ',' + ${drift}` : ''} + '}';`);
  } else if (kind === 'csv') {
    const parts = columns.map((c, i) => `H.csvCell(${vars[i]}, COLS[${i}], G) + ','`);
    const extra = driftKeys.length ? ` + H.csvText('{' + ${drift} + '}', G)` : '';
    body.push(`return ${parts.join(' + ')}${extra} + '\\r\\n';`);
  } else {
    columns.forEach((c, i) =>
      body.push(
        appendCode(c, `B[${i}]`, c.type === 'timestamp' && sources.get(c.name)?.kind === 'meta' ? `K.micros[${js(c.name)}]` : vars[i]!),
      ),
    );
    body.push(driftKeys.length ? `B[${columns.length}].string('{' + ${drift} + '}');` : `B[${columns.length}].null();`, 'return true;');
  }
  const fail = kind === 'parquet' ? 'false' : 'null';
  const params = kind === 'parquet' ? 'rec, B' : 'rec';
  const source = `return function encode_${cols(spec.name)}(${params}) {\n${body.join('\n').replaceAll('FAIL', fail)}\n};`;
  // The generated serialiser: its only inputs are the resource's declared names, escaped with JSON.stringify.
  const factory = new Function('H', 'KEYS', 'CONV', 'COLS', 'G', 'K', 'DK', 'SEEN', source) as (
    ...a: unknown[]
  ) => TextRecordEncoder | ColumnRecordEncoder;
  return (k: TaskConstants, seen = new Uint8Array(driftKeys.length)) => {
    const micros: Record<string, number> = {};
    for (const m of META_COLUMNS)
      if (m.type === 'timestamp' && typeof k.meta[m.name] === 'string') micros[m.name] = isoMicros(k.meta[m.name] as string);
    return factory(HELPERS, keySets, converters, columns, guard, { meta: k.meta, micros }, driftKeys, seen);
  };
}

/** A safe JavaScript identifier fragment for a column name. */
function cols(name: string): string {
  return name.replace(/[^A-Za-z0-9_]/g, (ch) => `$${ch.charCodeAt(0).toString(16)}`);
}

/** Appending one converted value to its Parquet column, as format/parquet/writer.ts appendValue does. */
function appendCode(c: ColumnDef, b: string, v: string): string {
  switch (c.type) {
    case 'timestamp':
      return `if (${v} === null) ${b}.null(); else ${b}.int64(${v});`;
    case 'integer':
      return `if (${v} === null) ${b}.null(); else ${b}.int64(${v});`;
    case 'double':
      return `if (${v} === null) ${b}.null(); else ${b}.double(${v});`;
    case 'boolean':
      return `if (${v} === null) ${b}.null(); else ${b}.boolean(${v} === true || ${v} === 'true');`;
    default:
      return `if (${v} === null) ${b}.null(); else ${b}.string(typeof ${v} === 'string' ? ${v} : String(${v}));`;
  }
}
