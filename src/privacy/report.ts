/**
 * What the policy did in one run, for the manifest and the summary (issue 22): each policy entry
 * with the columns it decided (a misspelt override shows as matching nothing), and for every
 * undeclared field (drift, and the fields of included people, which the API contract does not
 * describe) what happened to it: kept, dropped or pseudonymised. Computed once at the end of a
 * run from the manifest's tables and drift names: nothing per row.
 */
import type { ManifestTask, PersonalDataRecord } from '../manifest/types.ts';
import { EXTRA_COLUMN, type TableSchema } from '../table.ts';
import { classifyColumn } from './classify.ts';
import { companionOf, type NameClass } from './name-rules.ts';
import { classAction, type Action, type PersonalDataPolicy } from './policy.ts';

export type FieldAction = 'kept' | 'dropped' | 'pseudonymised';
export type PolicyMatches = NonNullable<PersonalDataRecord['matched']>;

const PAST: Record<Action, FieldAction> = { keep: 'kept', drop: 'dropped', pseudonymise: 'pseudonymised' };
const TEXT = new Set(['string', 'json']);

/** The policy entry that decides a column and the action as written (compile.ts applies the same). */
export function columnDecision(
  schema: TableSchema,
  column: string,
  policy: PersonalDataPolicy,
): { cls: NameClass | undefined; override?: string; action: Action } {
  const { cls } = classifyColumn(schema, column);
  const declared = schema.columns.find((c) => c.name === column);
  const companion = declared ? undefined : companionOf(column);
  const key = `${schema.name}.${column}`;
  const base = companion ? `${schema.name}.${companion.base}` : undefined;
  const override = policy.columns[key] !== undefined ? key : base && policy.columns[base] !== undefined ? base : undefined;
  let action = override ? policy.columns[override]! : cls ? classAction(policy, cls) : 'keep';
  // a typed column cannot hold a pseudonym, nor can a zone name mean anything for one
  if (action === 'pseudonymise' && ((declared && !TEXT.has(declared.type)) || companion?.kind === 'timezone')) action = 'drop';
  return { cls, ...(override ? { override } : {}), action };
}

/** Nothing to report for the default (no policy at all). */
export function hasEntries(p: PersonalDataPolicy): boolean {
  return p.person_id !== 'keep' || p.direct_identifier !== 'keep' || p.free_text !== 'keep' || Object.keys(p.columns).length > 0;
}

/** Each entry of the policy with the columns ("table.column") it decided in the run's committed tasks. */
export function policyMatches(tasks: readonly ManifestTask[], tables: readonly TableSchema[], policy: PersonalDataPolicy): PolicyMatches {
  const classes: Record<string, Set<string>> = { person_id: new Set(), direct_identifier: new Set(), free_text: new Set() };
  const columns: Record<string, Set<string>> = Object.fromEntries(Object.keys(policy.columns).map((k) => [k, new Set<string>()]));
  const byName = new Map(tables.map((t) => [t.name, t]));
  // the tables written and the drift names, once over the tasks; columns are classified once per table
  const written = new Set<string>();
  const seen = new Map<string, Set<string>>();
  for (const t of tasks) {
    if (t.status !== 'committed') continue;
    for (const table in t.rows ?? {}) if (t.rows[table]! > 0) written.add(table);
    for (const [table, fields] of Object.entries(t.drift_fields ?? {})) {
      const set = seen.get(table) ?? seen.set(table, new Set()).get(table)!;
      for (const f of fields) set.add(f);
    }
  }
  for (const table of written) {
    const set = seen.get(table) ?? seen.set(table, new Set()).get(table)!;
    for (const c of byName.get(table)?.columns ?? []) if (!c.name.startsWith('_') && c.name !== EXTRA_COLUMN.name) set.add(c.name);
  }
  for (const [table, cols] of seen) {
    const schema = byName.get(table) ?? { name: table, columns: [], key: [] };
    for (const c of cols) {
      const d = columnDecision(schema, c, policy);
      if (d.override) columns[d.override]!.add(`${table}.${c}`);
      else if (d.cls) (classes[d.cls] ??= new Set()).add(`${table}.${c}`);
    }
  }
  const sorted = (m: Record<string, Set<string>>) => Object.fromEntries(Object.entries(m).map(([k, v]) => [k, [...v].sort()]));
  return { classes: sorted(classes), columns: sorted(columns) };
}

/** What happened to each undeclared field of a table under the policy. */
export function fieldActions(
  drift: Readonly<Record<string, readonly string[]>>,
  tables: readonly TableSchema[],
  policy: PersonalDataPolicy,
): Record<string, Record<string, FieldAction>> {
  const out: Record<string, Record<string, FieldAction>> = {};
  for (const [table, fields] of Object.entries(drift)) {
    const schema = tables.find((t) => t.name === table) ?? { name: table, columns: [], key: [] };
    out[table] = Object.fromEntries(fields.map((f) => [f, PAST[columnDecision(schema, f, policy).action]]));
  }
  return out;
}

const list = (xs: readonly string[], n = 8): string => `${xs.slice(0, n).join(', ')}${xs.length > n ? `, … (${xs.length - n} more)` : ''}`;

/** The summary's lines for each policy entry: the columns it decided, or that it matched nothing. */
export function matchLines(r: PersonalDataRecord): string[] {
  if (!r.matched) return [];
  const lines: string[] = [];
  const policy = { person_id: r.person_id, direct_identifier: r.direct_identifier, free_text: r.free_text } as Record<string, Action>;
  for (const [cls, cols] of Object.entries(r.matched.classes)) {
    const action = policy[cls] ?? 'the strictest action';
    lines.push(`  ${cls} (${action}): ${cols.length ? `${cols.length} column(s): ${list(cols)}` : 'no column in this run'}`);
  }
  for (const [key, cols] of Object.entries(r.matched.columns)) {
    lines.push(
      `  ${key}=${r.columns?.[key] ?? '?'}: ${cols.length ? list(cols) : 'matched no column in this run (declared, but no row had it, or a field the service did not send)'}`,
    );
  }
  return lines;
}

/**
 * The lines for undeclared fields: the fields of included people (not in the API contract, so
 * classified by name) apart from schema drift, each with what the policy in force did to them.
 */
export function fieldLines(
  drift: Readonly<Record<string, readonly string[]>>,
  includeFields: Readonly<Record<string, readonly string[]>>,
  actions: Readonly<Record<string, Readonly<Record<string, FieldAction>>>>,
): string[] {
  const grouped = (table: string, fields: readonly string[]): string => {
    if (!actions[table]) return list(fields); // not told what the policy did: no claim about it
    const by: Record<string, string[]> = {};
    for (const f of fields) (by[actions[table]?.[f] ?? 'kept'] ??= []).push(f);
    return (['dropped', 'pseudonymised', 'kept'] as const)
      .filter((a) => by[a])
      .map((a) => `${a} ${list(by[a]!)}`)
      .join('; ');
  };
  return [
    ...Object.entries(includeFields).map(
      ([t, f]) => `  fields of included people in ${t} (not in the API contract; classified by name): ${grouped(t, f)}`,
    ),
    ...Object.entries(drift).map(([t, f]) => `  schema drift in ${t}: ${f.length} undeclared field(s) seen: ${grouped(t, f)}`),
  ];
}
