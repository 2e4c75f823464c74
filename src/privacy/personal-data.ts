/**
 * The policy of one run, ready to apply: create it once per run, ask it for each table's
 * transform. Transforms are compiled once per table name and reused by every task of the run,
 * so drift columns are classified once per table per run.
 *
 *   const pd = createPersonalData(policy, key)       once per run (key: PseudonymiseKey | undefined)
 *   pd.transformFor(schema)?.(rows)                  each table's rows after flattening, before writing
 *   pd.record                                        the manifest's `personal_data` (and the summary's)
 *   pd.fingerprint                                   per-resource state: a change forces a full re-read
 */
import { ConfigError } from '../errors.ts';
import type { PersonalDataRecord } from '../manifest/types.ts';
import type { TableSchema } from '../table.ts';
import { compilePolicy, type RowTransform } from './compile.ts';
import { needsKey, policyFingerprint, policyRecord, type PersonalDataPolicy } from './policy.ts';
import { createPseudonymiser, type PseudonymiseKey } from './pseudonym.ts';

export interface PersonalData {
  readonly policy: PersonalDataPolicy;
  readonly record: PersonalDataRecord;
  readonly fingerprint: string;
  transformFor(schema: TableSchema): RowTransform | undefined;
}

export function createPersonalData(policy: PersonalDataPolicy, key?: PseudonymiseKey): PersonalData {
  if (needsKey(policy) && !key) {
    throw new ConfigError(
      'personal_data: pseudonymising needs a key: pass --pseudonymise-key-file PATH (or set SCHOOL_EXPORT_PSEUDONYMISE_KEY_FILE)',
    );
  }
  const pseudonymise = key && needsKey(policy) ? createPseudonymiser(key) : undefined;
  const record = policyRecord(policy, key);
  const compiled = new Map<string, RowTransform | undefined>();
  return {
    policy,
    record,
    fingerprint: policyFingerprint(record),
    transformFor(schema) {
      if (!compiled.has(schema.name)) compiled.set(schema.name, compilePolicy(schema, policy, pseudonymise));
      return compiled.get(schema.name);
    },
  };
}
