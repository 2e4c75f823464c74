/**
 * The data map: what each table's columns hold about a person, from the declarations in
 * src/resources (and, for examples of undeclared fields, the name rules); dataMapRows() is the
 * whole map with the policy's action per column, as `school-export datamap` prints it.
 */
import { EXTRA_COLUMN, type PersonalClass, type TableSchema } from '../table.ts';
import { classifyColumn } from './classify.ts';
import { companionOf, isPersonTable, type NameClass } from './name-rules.ts';
import type { Action, PersonalDataPolicy } from './policy.ts';
import { columnDecision } from './report.ts';

export interface DataMapColumn {
  column: string;
  class: PersonalClass;
  when?: { column: string; in: readonly string[] };
}

export interface DataMapTable {
  table: string;
  /** A table of people: every undeclared field describes a person. */
  people: boolean;
  personal: DataMapColumn[];
}

export function dataMap(tables: readonly TableSchema[]): DataMapTable[] {
  return tables.map((t) => ({
    table: t.name,
    people: isPersonTable(t.name),
    personal: t.columns.flatMap((c) =>
      c.personal ? [{ column: c.name, class: c.personal, ...(c.personalWhen ? { when: c.personalWhen } : {}) }] : [],
    ),
  }));
}

/** Fields the service sends for included students and employees (not in its contract), and a few others, as examples. */
export const EXAMPLE_FIELDS: readonly { table: string; column: string }[] = [
  ...['id', 'mis_id', 'upn', 'forename', 'surname', 'legal_surname', 'preferred_name', 'date_of_birth', 'date_of_birth__timezone'].map(
    (column) => ({ table: 'achievement_students', column }),
  ),
  ...['year_group', 'gender', 'email_address', 'created_at', 'notes'].map((column) => ({ table: 'achievement_students', column })),
  ...['title', 'initials', 'mobile_number'].map((column) => ({ table: 'achievement_employees', column })),
  ...['recorded_by', 'student_ids', 'witnesses', 'house', 'location__description'].map((column) => ({ table: 'achievements', column })),
  ...['name', 'group_lead__surname', 'size'].map((column) => ({ table: 'groups', column })),
];

/** The examples classified as a run would (declared columns by their declaration, companions by their column). */
export function exampleClasses(
  tables: readonly TableSchema[],
): { table: string; column: string; class: NameClass | undefined; how: string }[] {
  return EXAMPLE_FIELDS.map((e) => {
    const schema = tables.find((t) => t.name === e.table) ?? { name: e.table, columns: [], key: [] };
    const c = classifyColumn(schema, e.column);
    return { ...e, class: c.cls, how: c.how };
  });
}

/** One column of the full data map (`school-export datamap`): what it holds, why we think so, what the policy does. */
export interface DataMapRow {
  type: 'column';
  table: string;
  column: string;
  class: NameClass | 'none';
  /** declaration, metadata, name rule, strictest default (no rule names it), or "... of <column>" for a companion. */
  source: string;
  /** The class applies only to rows whose `column` holds one of `in` (deletions of people). */
  when?: { column: string; in: readonly string[] };
  /** What the policy does to it (a pseudonym where a typed column cannot hold one is a drop). */
  action: Action;
  /** The action comes from a per-column override (its key). */
  override?: string;
  declared: boolean;
  /** Undeclared: seen in the destination's runs (datamap --dest). */
  seen?: boolean;
}

/**
 * Every column of every table (declared ones, then the undeclared fields the destination's runs
 * saw and those the policy names) with its class, where the class comes from, and the action the
 * policy takes.
 */
export function dataMapRows(
  tables: readonly TableSchema[],
  policy: PersonalDataPolicy,
  seen: Readonly<Record<string, readonly string[]>> = {},
): DataMapRow[] {
  const rows: DataMapRow[] = [];
  const byName = new Map(tables.map((t) => [t.name, t]));
  const undeclared = new Map<string, Set<string>>();
  for (const [t, fields] of Object.entries(seen))
    for (const f of fields) (undeclared.get(t) ?? undeclared.set(t, new Set()).get(t)!).add(f);
  for (const key of Object.keys(policy.columns)) {
    const dot = key.indexOf('.');
    const [t, c] = [key.slice(0, dot), key.slice(dot + 1)];
    if (!byName.get(t)?.columns.some((x) => x.name === c)) (undeclared.get(t) ?? undeclared.set(t, new Set()).get(t)!).add(c);
  }
  const names = [...new Set([...tables.map((t) => t.name), ...undeclared.keys()])];
  for (const name of names) {
    const schema = byName.get(name) ?? { name, columns: [], key: [] };
    for (const c of schema.columns) rows.push(row(schema, c.name, policy, true));
    for (const f of [...(undeclared.get(name) ?? [])].sort()) {
      if (schema.columns.some((c) => c.name === f)) continue;
      rows.push({ ...row(schema, f, policy, false), ...(seen[name]?.includes(f) ? { seen: true } : {}) });
    }
  }
  return rows;
}

function row(schema: TableSchema, column: string, policy: PersonalDataPolicy, declared: boolean): DataMapRow {
  const c = classifyColumn(schema, column);
  const d = columnDecision(schema, column, policy);
  const companion = c.how === 'companion' ? companionOf(column) : undefined;
  const base =
    c.how !== 'declared'
      ? c.cls === 'unsure'
        ? 'strictest default'
        : 'name rule'
      : column === EXTRA_COLUMN.name
        ? 'holds the undeclared fields below, each by its class'
        : column.startsWith('_')
          ? 'metadata'
          : 'declaration';
  const source = companion ? `${schema.columns.some((x) => x.name === companion.base) ? 'declaration' : base} of ${companion.base}` : base;
  return {
    type: 'column',
    table: schema.name,
    column,
    class: c.cls ?? 'none',
    source,
    ...(c.when ? { when: c.when } : {}),
    action: d.action,
    ...(d.override ? { override: d.override } : {}),
    declared,
  };
}

/** The data map as a person reads it: one block per table. */
export function renderDataMap(rows: readonly DataMapRow[], policyLine: string): string {
  const out = [policyLine];
  const tables = [...new Set(rows.map((r) => r.table))];
  const w = { column: 6, class: 5, source: 4 };
  for (const r of rows) {
    w.column = Math.max(w.column, r.column.length);
    w.class = Math.max(w.class, r.class.length);
    w.source = Math.max(w.source, r.source.length);
  }
  for (const t of tables) {
    out.push('', `${t}${isPersonTable(t) ? ' (a table of people: every undeclared field describes a person)' : ''}`);
    out.push(`  ${'column'.padEnd(w.column)}  ${'class'.padEnd(w.class)}  ${'from'.padEnd(w.source)}  action`);
    for (const r of rows.filter((x) => x.table === t)) {
      const notes = [
        r.when ? `when ${r.when.column} is ${r.when.in.join('/')}` : '',
        r.override ? `override ${r.override}` : '',
        r.declared ? '' : r.seen ? 'undeclared, seen in runs' : 'undeclared',
      ].filter(Boolean);
      out.push(
        `  ${r.column.padEnd(w.column)}  ${r.class.padEnd(w.class)}  ${r.source.padEnd(w.source)}  ${r.action}${notes.length ? ` (${notes.join('; ')})` : ''}`,
      );
    }
  }
  return out.join('\n') + '\n';
}
