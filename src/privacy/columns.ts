/**
 * Every column a policy names must exist (issue 22): `--personal-column achievements.commnt=drop`
 * used to be accepted and match nothing, so the comments it meant to drop were exported. A
 * `table.column` override is accepted when the table (built-in or custom) declares the column
 * (or its `__timezone` / `__raw` companion), when the name rules recognise the undeclared name
 * (a class, or a rule saying it holds nothing personal), or when a run of the destination saw
 * that field. Anything else stops the run before any request, with the closest known names.
 */
import { ConfigError } from '../errors.ts';
import type { TableSchema } from '../table.ts';
import { classifyColumn } from './classify.ts';
import type { Action } from './policy.ts';

/** Undeclared fields seen in a destination's runs, per table. */
export type FieldsSeen = Readonly<Record<string, readonly string[]>>;

/** Throws (exit 2) for the first override naming a column nobody knows, with the closest known names. */
export function checkPolicyColumns(columns: Readonly<Record<string, Action>>, tables: readonly TableSchema[], seen: FieldsSeen = {}): void {
  for (const key of Object.keys(columns).sort()) {
    const dot = key.indexOf('.');
    const [table, column] = [key.slice(0, dot), key.slice(dot + 1)];
    const schema = tables.find((t) => t.name === table);
    if (!schema || knownColumn(schema, column, seen)) continue; // an unknown table is refused with the other table checks
    const near = closest(key, knownKeys(tables, seen), Math.max(2, Math.floor(column.length / 3)));
    const hint = near.length
      ? `did you mean ${near.join(' or ')}?`
      : `${table} declares ${schema.columns
          .filter((c) => !c.name.startsWith('_'))
          .map((c) => c.name)
          .join(', ')}`;
    throw new ConfigError(
      `personal_data.columns.${key}: ${table} has no column ${JSON.stringify(column)}: it is not declared, no name rule recognises it and no run of this destination saw it; ${hint}`,
    );
  }
}

/** Declared, a companion of a declared column, a name a rule classifies, or a field a run saw. */
export function knownColumn(schema: TableSchema, column: string, seen: FieldsSeen = {}): boolean {
  if (seen[schema.name]?.includes(column)) return true;
  // `unsure` is what the rules say of a name none of them recognises
  return classifyColumn(schema, column).cls !== 'unsure' || schema.columns.some((c) => c.name === column);
}

/** Every `table.column` a policy may name without a question: declared columns and fields seen. */
export function knownKeys(tables: readonly TableSchema[], seen: FieldsSeen = {}): string[] {
  const keys = new Set<string>();
  for (const t of tables) for (const c of t.columns) if (!c.name.startsWith('_')) keys.add(`${t.name}.${c.name}`);
  for (const [t, fields] of Object.entries(seen)) for (const f of fields) keys.add(`${t}.${f}`);
  return [...keys];
}

/** Edit distance (Levenshtein), for "did you mean". */
export function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length]!;
}

/** Up to three candidates within `limit` edits of `name` (default: a few, by its length), closest first. */
export function closest(name: string, candidates: readonly string[], limit = Math.max(2, Math.floor(name.length / 4)), max = 3): string[] {
  return candidates
    .map((c) => ({ c, d: distance(name, c) }))
    .filter((x) => x.d <= limit && x.c !== name)
    .sort((a, b) => a.d - b.d || a.c.localeCompare(b.c))
    .slice(0, max)
    .map((x) => x.c);
}
