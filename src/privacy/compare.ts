/**
 * Two personal-data policies compared setting by setting (issue 22): what a destination keeps is
 * the stricter of the runs it has seen, so a run's policy is checked against the destination's
 * before any request. A difference is weaker (a class or a column kept where it was
 * pseudonymised or dropped, pseudonymised where it was dropped), stricter, or another key.
 */
import type { PersonalDataRecord } from '../manifest/types.ts';
import type { TableSchema } from '../table.ts';
import { classifyColumn } from './classify.ts';
import { actionRank, classAction, policyOf, type Action } from './policy.ts';

export interface PolicyDifference {
  /** `person_id`, `direct_identifier`, `free_text`, `columns.<table>.<column>` or `key`. */
  setting: string;
  from: string;
  to: string;
  kind: 'weaker' | 'stricter' | 'key';
}

const CLASSES = ['person_id', 'direct_identifier', 'free_text'] as const;

/** Every difference from `from` to `to`; [] when they apply the same actions with the same key. */
export function comparePolicies(from: PersonalDataRecord, to: PersonalDataRecord, tables: readonly TableSchema[]): PolicyDifference[] {
  const out: PolicyDifference[] = [];
  for (const cls of CLASSES) {
    const [a, b] = [from[cls], to[cls]];
    if (a !== b) out.push({ setting: cls, from: a, to: b, kind: actionRank(b) > actionRank(a) ? 'stricter' : 'weaker' });
  }
  // An override is compared with what the other policy does to the same column (its own
  // override, else its class's action), so removing `"achievements.comment": "drop"` under
  // free_text keep is as weaker as writing keep.
  const keys = new Set([...Object.keys(from.columns ?? {}), ...Object.keys(to.columns ?? {})]);
  for (const key of [...keys].sort()) {
    const [a, b] = [columnAction(from, key, tables), columnAction(to, key, tables)];
    if (a.action === b.action) continue;
    out.push({
      setting: `columns.${key}`,
      from: a.text,
      to: b.text,
      kind: actionRank(b.action) > actionRank(a.action) ? 'stricter' : 'weaker',
    });
  }
  if (from.key_id && to.key_id && from.key_id !== to.key_id) out.push({ setting: 'key', from: from.key_id, to: to.key_id, kind: 'key' });
  return out;
}

/** "free_text keep -> drop (stricter)" */
export function describeDifference(d: PolicyDifference): string {
  const kind = d.kind === 'key' ? 'another key: pseudonyms do not join' : d.kind;
  return `${d.setting} ${d.from} -> ${d.to} (${kind})`;
}

/** Data written under `from` holds values `to` would not write: a stricter setting, or another key. */
export function tightens(diffs: readonly PolicyDifference[]): boolean {
  return diffs.some((d) => d.kind !== 'weaker');
}

/** What a policy does to one column: its override, else its class's action. */
function columnAction(r: PersonalDataRecord, key: string, tables: readonly TableSchema[]): { action: Action; text: string } {
  const override = r.columns?.[key];
  if (override) return { action: override, text: override };
  const dot = key.indexOf('.');
  const [table, column] = [key.slice(0, dot), key.slice(dot + 1)];
  const schema = tables.find((t) => t.name === table) ?? { name: table, columns: [], key: [] };
  const cls = classifyColumn(schema, column).cls;
  const action = cls ? classAction(policyOf(r), cls) : 'keep';
  return { action, text: `${action} (by its class ${cls ?? 'none'})` };
}
