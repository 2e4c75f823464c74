/**
 * The personal-data policy: what happens to each class of personal column (docs/personal-data.md).
 * Pure data and pure functions; the pipeline file's `personal_data` block and the flags become one
 * of these in config/resolve.ts.
 */
import { createHash } from 'node:crypto';
import type { PersonalDataRecord } from '../manifest/types.ts';
import type { PersonalClass } from '../table.ts';
import type { NameClass } from './name-rules.ts';
import type { PseudonymiseKey } from './pseudonym.ts';

export type Action = 'keep' | 'pseudonymise' | 'drop';

export interface PersonalDataPolicy {
  person_id: 'keep' | 'pseudonymise';
  direct_identifier: 'keep' | 'pseudonymise' | 'drop';
  free_text: 'keep' | 'drop';
  /** Per-column overrides, "table.column" -> action; they win over the column's class. */
  columns: Readonly<Record<string, Action>>;
}

/** Today's behaviour, the default: every value as read. */
export const KEEP_ALL: PersonalDataPolicy = Object.freeze({ person_id: 'keep', direct_identifier: 'keep', free_text: 'keep', columns: {} });

/** The actions each class allows (a person id is never dropped: rows would lose their key; free text has nothing to join on). */
export const CLASS_ACTIONS: Readonly<Record<PersonalClass, readonly Action[]>> = {
  person_id: ['keep', 'pseudonymise'],
  direct_identifier: ['keep', 'pseudonymise', 'drop'],
  free_text: ['keep', 'drop'],
};

const RANK: Record<Action, number> = { keep: 0, pseudonymise: 1, drop: 2 };

/** How strict an action is: keep < pseudonymise < drop. */
export function actionRank(a: Action): number {
  return RANK[a];
}

/** The policy a record describes (what the manifest and the destination keep of a policy). */
export function policyOf(r: PersonalDataRecord): PersonalDataPolicy {
  return { person_id: r.person_id, direct_identifier: r.direct_identifier, free_text: r.free_text, columns: { ...(r.columns ?? {}) } };
}

export function isKeepAll(p: PersonalDataPolicy): boolean {
  return (
    p.person_id === 'keep' &&
    p.direct_identifier === 'keep' &&
    p.free_text === 'keep' &&
    Object.values(p.columns).every((a) => a === 'keep')
  );
}

/** Whether the policy needs a key (any class or override pseudonymises). */
export function needsKey(p: PersonalDataPolicy): boolean {
  return p.person_id === 'pseudonymise' || p.direct_identifier === 'pseudonymise' || Object.values(p.columns).includes('pseudonymise');
}

/** The action for a class; an `unsure` column gets the strictest action the policy gives any class. */
export function classAction(p: PersonalDataPolicy, cls: NameClass): Action {
  if (cls !== 'unsure') return p[cls];
  const all: Action[] = [p.person_id, p.direct_identifier, p.free_text];
  return all.reduce((a, b) => (RANK[b] > RANK[a] ? b : a));
}

/** What the manifest and the summary say was applied. */
export function policyRecord(p: PersonalDataPolicy, key?: PseudonymiseKey): PersonalDataRecord {
  return {
    person_id: p.person_id,
    direct_identifier: p.direct_identifier,
    free_text: p.free_text,
    ...(Object.keys(p.columns).length ? { columns: { ...p.columns } } : {}),
    ...(key && needsKey(p) ? { key_id: key.id } : {}),
  };
}

/**
 * A short digest of the applied policy and key fingerprint: state records it per resource, and a
 * resource whose digest changed is re-read in full (old rows must not mix with differently
 * transformed ones; a full snapshot lets a loader replace them).
 */
export function policyFingerprint(r: PersonalDataRecord): string {
  // A `keep` override counts: under free_text drop, "achievements.comment": "keep" writes comments.
  const cols = Object.entries(r.columns ?? {}).sort(([a], [b]) => a.localeCompare(b));
  const classesKeep = r.person_id === 'keep' && r.direct_identifier === 'keep' && r.free_text === 'keep';
  if (classesKeep && cols.every(([, a]) => a === 'keep')) return 'keep';
  const canonical = JSON.stringify([r.person_id, r.direct_identifier, r.free_text, cols, r.key_id ?? null]);
  return createHash('sha256').update(canonical).digest('hex').slice(0, 16);
}

/** One line for the run summary. */
export function describePolicy(r: PersonalDataRecord): string {
  if (policyFingerprint(r) === 'keep') return 'personal data: kept as read (no personal_data policy)';
  const verb = { keep: 'kept', pseudonymise: 'pseudonymised', drop: 'dropped' } as const;
  const parts = [`person ids ${verb[r.person_id]}`, `direct identifiers ${verb[r.direct_identifier]}`, `free text ${verb[r.free_text]}`];
  const cols = Object.entries(r.columns ?? {}).map(([c, a]) => `${c}=${a}`);
  return `personal data: ${parts.join(', ')}${cols.length ? `; columns ${cols.join(', ')}` : ''}${r.key_id ? ` (key ${r.key_id})` : ''}`;
}
