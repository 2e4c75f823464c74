import { columnName } from '../resources/schema.ts';
import type { FieldSpec } from '../resources/types.ts';
import type { Row } from '../table.ts';
import { CONVERTERS, MISMATCH, rawScalar, type Converter } from './convert.ts';
import { convertDatetime } from './datetime.ts';
import { flattenGeneric } from './generic.ts';

/**
 * A declared object shape compiled once into a tree keyed by field name, so flattening a record
 * is one pass over its own keys: declared leaves are converted into their column, declared
 * objects are descended, anything else is flattened generically as drift.
 */
type Leaf = { kind: 'leaf'; col: string; conv: Converter | null /* null: datetime */ };
type Node = { kind: 'node'; col: string; children: Map<string, Leaf | Node> };

export interface CompiledShape {
  /** All declared columns set to null, in schema order: rows start as a copy of this. */
  template: Row;
  /** Fill `row` from `obj`; undeclared names go to `drift`. Keys in `skip` (includes) are ignored. */
  fill(obj: Record<string, unknown>, row: Row, drift: Set<string>, skip?: ReadonlySet<string>): void;
}

function buildTree(fields: FieldSpec[]): Node {
  const root: Node = { kind: 'node', col: '', children: new Map() };
  for (const field of fields) {
    const parts = field.path.split('.');
    let node = root;
    for (let i = 0; i < parts.length - 1; i++) {
      let next = node.children.get(parts[i]);
      if (!next || next.kind !== 'node') {
        next = { kind: 'node', col: columnName(parts.slice(0, i + 1).join('.')), children: new Map() };
        node.children.set(parts[i], next);
      }
      node = next;
    }
    const conv = field.type === 'datetime' ? null : CONVERTERS[field.type];
    node.children.set(parts[parts.length - 1], { kind: 'leaf', col: columnName(field.path), conv });
  }
  return root;
}

function fillNode(node: Node, obj: Record<string, unknown>, row: Row, drift: Set<string>, skip?: ReadonlySet<string>): void {
  for (const k in obj) {
    const entry = node.children.get(k);
    const v = obj[k];
    if (v === undefined) continue; // not JSON: only reachable from hand-built records
    if (entry === undefined) {
      if (skip !== undefined && skip.has(k)) continue;
      flattenGeneric(v, node.col === '' ? k : `${node.col}__${k}`, row, drift);
    } else if (entry.kind === 'leaf') {
      if (v === null || v === undefined) continue; // the template already holds null
      if (entry.conv === null) {
        const d = convertDatetime(v);
        row[entry.col] = d.instant;
        row[`${entry.col}__timezone`] = d.timezone;
        if (d.raw !== undefined) keepRaw(entry.col, d.raw, row, drift);
      } else {
        const c = entry.conv(v);
        if (c === MISMATCH) keepRaw(entry.col, v, row, drift);
        else row[entry.col] = c;
      }
    } else if (v !== null && v !== undefined) {
      if (typeof v === 'object' && !Array.isArray(v)) fillNode(entry, v as Record<string, unknown>, row, drift);
      else keepRaw(entry.col, v, row, drift);
    }
  }
}

/** A value that does not fit its declared type: the column stays null, `<col>__raw` keeps the value. */
function keepRaw(col: string, v: unknown, row: Row, drift: Set<string>): void {
  const name = `${col}__raw`;
  row[name] = rawScalar(v);
  drift.add(name);
}

export function compileShape(fields: FieldSpec[], leading: Row = {}): CompiledShape {
  const template: Row = { ...leading };
  for (const field of fields) {
    const col = columnName(field.path);
    template[col] = null;
    if (field.type === 'datetime') template[`${col}__timezone`] = null;
  }
  const root = buildTree(fields);
  return {
    template,
    fill: (obj, row, drift, skip) => fillNode(root, obj, row, drift, skip),
  };
}
