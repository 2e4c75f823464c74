/**
 * A policy compiled for one table: a synchronous, I/O-free function that changes rows in place
 * (after flattening, before any writer sees them).
 *
 *   compilePolicy(schema, policy, pseudonymise?) -> ((rows: Row[]) => void) | undefined
 *
 * undefined when the policy keeps everything, so the default costs nothing. Declared columns are
 * resolved once here; an undeclared (drift) column is classified by name the first time it is
 * seen and remembered for the life of the returned function (one per table per run), never
 * recomputed per row. What each action does:
 *   - drop: a declared column becomes null (the table keeps its columns); a drift key is removed
 *     (so NDJSON keys and the `_extra` JSON no longer hold it);
 *   - pseudonymise: strings (and numbers, as their decimal text) become p_… pseudonyms; a typed
 *     column (timestamp, number, boolean) or a datetime's `__timezone` cannot hold one and is
 *     dropped instead; booleans and nulls are left as they are;
 *   - person ids inside JSON text (the ACL's `ids`, drift arrays of people) are transformed
 *     element by element, and the other fields of people found there follow the name rules.
 */
import { ConfigError } from '../errors.ts';
import { EXTRA_COLUMN, type ColumnDef, type Row, type Scalar, type TableSchema } from '../table.ts';
import { classifyColumn } from './classify.ts';
import { classifyName, companionOf, type NameClass } from './name-rules.ts';
import { classAction, isKeepAll, type Action, type PersonalDataPolicy } from './policy.ts';
import type { Pseudonymise } from './pseudonym.ts';

export type RowTransform = (rows: Row[]) => void;

interface Rule {
  cls: NameClass | undefined;
  action: Action;
  /** Set by an explicit per-column override: applied as written, no looking inside JSON. */
  explicit: boolean;
  when?: { column: string; in: ReadonlySet<string> };
}

/** What to do to one cell; null: nothing. */
type Op = 'null' | 'delete' | 'pseudonymise' | 'people';
interface Plan {
  name: string;
  op: Op;
  when?: Rule['when'];
}

const TEXT_TYPES = new Set<ColumnDef['type']>(['string', 'json']);
const DROP = Symbol('drop');

export function compilePolicy(schema: TableSchema, policy: PersonalDataPolicy, pseudonymise?: Pseudonymise): RowTransform | undefined {
  if (isKeepAll(policy)) return undefined;
  const table = schema.name;
  const declared = new Map(schema.columns.map((c) => [c.name, c]));
  // Inside a list of people, something changes only if ids are pseudonymised or some class is not kept.
  const peopleMatter = policy.person_id === 'pseudonymise' || classAction(policy, 'unsure') !== 'keep';
  const rules = new Map<string, Rule>();

  const pseudo = (v: string): string => {
    if (!pseudonymise) throw new ConfigError(`personal_data: pseudonymising ${table} needs a key (--pseudonymise-key-file)`);
    return pseudonymise(v);
  };

  const ruleFor = (name: string): Rule => {
    let r = rules.get(name);
    if (r) return r;
    const { cls, when } = classifyColumn(schema, name, declared);
    // A zone name or a raw value follows its column's override too.
    const companion = declared.has(name) ? undefined : companionOf(name);
    const override = policy.columns[`${table}.${name}`] ?? (companion ? policy.columns[`${table}.${companion.base}`] : undefined);
    const action = override ?? (cls ? classAction(policy, cls) : 'keep');
    r = { cls, action, explicit: override !== undefined };
    // An override is meant for every row.
    if (when && override === undefined) r.when = { column: when.column, in: new Set(when.in) };
    rules.set(name, r);
    return r;
  };

  /** The operation for a cell of column `name` (declared or not). */
  const opFor = (name: string): Op | null => {
    const r = ruleFor(name);
    const col = declared.get(name);
    // A typed column cannot hold a pseudonym, nor can a zone name mean anything for one.
    const action =
      r.action === 'pseudonymise' && ((col && !TEXT_TYPES.has(col.type)) || companionOf(name)?.kind === 'timezone') ? 'drop' : r.action;
    if (action === 'drop') return col ? 'null' : 'delete';
    const mayHoldJson = !col || col.type === 'json';
    if (r.cls === 'person_id' && !r.explicit && mayHoldJson && peopleMatter) return 'people';
    if (action === 'pseudonymise') return 'pseudonymise';
    return null;
  };

  // Nested keys of people found inside JSON values, classified once per path.
  const nested = new Map<string, NameClass | undefined>();
  const nestedClass = (path: string): NameClass | undefined => {
    if (!nested.has(path)) nested.set(path, classifyName(table, path, { person: true }));
    return nested.get(path);
  };

  /** A value that holds people: ids are pseudonymised (when the policy says so), other fields follow their names. */
  const people = (v: unknown, path: string): unknown => {
    if (typeof v === 'string') return policy.person_id === 'pseudonymise' ? pseudo(v) : v;
    if (typeof v === 'number') return policy.person_id === 'pseudonymise' ? pseudo(String(v)) : v;
    if (Array.isArray(v)) return v.map((x) => people(x, path)).filter((x) => x !== DROP);
    if (v !== null && typeof v === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
        const sub = `${path}__${k}`;
        const cls = nestedClass(sub);
        if (cls === 'person_id') out[k] = people(x, sub);
        else {
          const y = applyAction(cls ? classAction(policy, cls) : 'keep', x);
          if (y !== DROP) out[k] = y;
        }
      }
      return out;
    }
    return v;
  };

  const applyAction = (action: Action, v: unknown): unknown => {
    if (action === 'drop') return DROP;
    if (action === 'keep' || v === null || typeof v === 'boolean') return v;
    return pseudo(typeof v === 'string' ? v : typeof v === 'number' ? String(v) : JSON.stringify(v));
  };

  /** A cell of a people column: JSON text is transformed inside, a plain id as one. */
  const peopleCell = (v: Scalar, name: string): Scalar => {
    if (typeof v === 'string' && (v.startsWith('[') || v.startsWith('{'))) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(v);
      } catch {
        return people(v, name) as Scalar;
      }
      return JSON.stringify(people(parsed, name));
    }
    return people(v, name) as Scalar;
  };

  const apply = (p: Plan, row: Row): void => {
    if (p.when && !p.when.in.has(String(row[p.when.column]))) return;
    const v = row[p.name];
    // a drift key is removed, not nulled: NDJSON keys and `_extra` then never mention it
    if (p.op === 'delete') Reflect.deleteProperty(row, p.name);
    else if (p.op === 'null') row[p.name] = null;
    else if (v === null || v === undefined || typeof v === 'boolean') return;
    else if (p.op === 'pseudonymise') row[p.name] = pseudo(typeof v === 'string' ? v : String(v));
    else row[p.name] = peopleCell(v, p.name);
  };

  const planFor = (name: string): Plan | null => {
    const op = opFor(name);
    if (op === null) return null;
    const when = ruleFor(name).when;
    return when ? { name, op, when } : { name, op };
  };

  const declaredPlans: Plan[] = [];
  for (const c of schema.columns) {
    if (c.name === EXTRA_COLUMN.name) continue;
    const p = planFor(c.name);
    if (p) declaredPlans.push(p);
  }
  // Declared columns that cannot be honoured are a configuration error, found before any row.
  for (const [key, action] of Object.entries(policy.columns)) {
    const [t, c] = [key.slice(0, key.indexOf('.')), key.slice(key.indexOf('.') + 1)];
    const col = t === table ? declared.get(c) : undefined;
    if (col && action === 'pseudonymise' && !TEXT_TYPES.has(col.type)) {
      throw new ConfigError(`personal_data.columns.${key}: ${key} holds ${col.type} values and cannot hold a pseudonym; use drop`);
    }
  }
  const driftPlans = new Map<string, Plan | null>();

  /** Undeclared fields folded into `_extra` by someone upstream follow the same rules as drift keys. */
  const extra = (text: string): string | null => {
    let obj: Record<string, Scalar>;
    try {
      obj = JSON.parse(text) as Record<string, Scalar>;
    } catch {
      return applyAction(classAction(policy, 'unsure'), text) === DROP ? null : text;
    }
    transformDrift(obj as Row);
    return Object.keys(obj).length ? JSON.stringify(obj) : null;
  };

  const transformDrift = (row: Row): void => {
    for (const k in row) {
      if (declared.has(k)) continue;
      let p = driftPlans.get(k);
      if (p === undefined) {
        p = planFor(k);
        driftPlans.set(k, p);
      }
      if (p !== null) apply(p, row);
    }
  };

  return (rows) => {
    for (const row of rows) {
      for (const p of declaredPlans) apply(p, row);
      transformDrift(row);
      const x = row[EXTRA_COLUMN.name];
      if (typeof x === 'string') row[EXTRA_COLUMN.name] = extra(x);
    }
  };
}
