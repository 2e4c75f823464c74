/**
 * A destination keeps its personal-data policy and its format (issue 22). Before any request a
 * run (and a dry run) compares what it would write with the destination's record:
 *
 *   - the first run records its policy and format;
 *   - a policy weaker anywhere (a class or an override less strict, or none at all) or another
 *     key stops with exit 2, naming each difference, unless --personal-data-change accepts it;
 *   - a stricter policy is accepted and announced: every resource is read again in full, and the
 *     files written under the weaker policy are deleted once replaced (tighten.ts);
 *   - another format stops with exit 2 unless --format-change.
 *
 * Accepted changes are recorded in the run manifest (who, when, from what, each difference) and
 * in the record. `--personal-data-change` and `--format-change` are flags only: a setting in a
 * file or the environment would accept every later change without anyone deciding it.
 */
import { hostname, userInfo } from 'node:os';
import { ConfigError, ExportError } from '../errors.ts';
import type { Manifest, PersonalDataRecord, PolicyChangeRecord } from '../manifest/types.ts';
import type { DestinationStore } from './store.ts';
import type { TableSchema } from '../table.ts';
import { checkPolicyColumns } from './columns.ts';
import { comparePolicies, describeDifference, tightens } from './compare.ts';
import { bareRecord, readDestinationRecord, withEarlier, writeDestinationRecord, type DestinationRecord } from './destination.ts';
import { describePolicy, isKeepAll, policyFingerprint, policyOf } from './policy.ts';

/** Who accepted a change: this variable when set (a name, a ticket), else user@host of the process. */
export const CHANGED_BY_ENV = 'SCHOOL_EXPORT_CHANGED_BY';
/** Environment names someone might expect to accept a change: refused, the flags are the only way. */
const FLAG_ONLY = { SCHOOL_EXPORT_PERSONAL_DATA_CHANGE: '--personal-data-change', SCHOOL_EXPORT_FORMAT_CHANGE: '--format-change' };

export interface GuardInput {
  /** The run's policy as the manifest records it (policyRecord(policy, key)). */
  personalData: PersonalDataRecord;
  format: Manifest['format'];
  /** Every table the configuration knows (built-in and custom): override names are checked against them. */
  tables: readonly TableSchema[];
  accept: { personalDataChange: boolean; formatChange: boolean };
  runId: string;
  now: Date;
  /** Who accepts a change (changedBy()). */
  by: string;
  /** For messages: the destination as the user named it. */
  dest: string;
}

export interface GuardResult {
  /** The record as it stands once the run starts (written by recordDestination when `changed`). */
  record: DestinationRecord;
  changed: boolean;
  /** Lines for the summary (and the dry run): what was recorded, accepted or announced. */
  notes: string[];
  /** For the run manifest's personal_data.change. */
  change?: PolicyChangeRecord;
  /** For the run manifest's format_change. */
  formatChange?: NonNullable<Manifest['format_change']>;
  /** The policy became stricter (or the key changed) for rows written before: tighten.ts purges them once replaced. */
  tightened: boolean;
}

export function changedBy(env: NodeJS.ProcessEnv = process.env): string {
  const given = env[CHANGED_BY_ENV]?.trim();
  if (given) return given.replace(/[\u0000-\u001f\u007f]/g, ' ').slice(0, 200);
  try {
    return `${userInfo().username}@${hostname()}`;
  } catch {
    return `uid ${process.getuid?.() ?? '?'}@${hostname()}`;
  }
}

/** SCHOOL_EXPORT_PERSONAL_DATA_CHANGE and the like are refused (exit 2): accepting a change is a flag. */
export function refuseChangeSettings(env: NodeJS.ProcessEnv): void {
  for (const [name, flag] of Object.entries(FLAG_ONLY)) {
    if (env[name] !== undefined && env[name] !== '') {
      throw new ConfigError(`${name}: accepting a change is the flag ${flag} of one command line, never a setting; unset it`);
    }
  }
}

/** Reads the destination's record and decides (throws E_POLICY_CHANGE / E_FORMAT_CHANGE / E_CONFIG, exit 2). Writes nothing. */
export async function checkDestination(sink: DestinationStore, input: GuardInput): Promise<GuardResult> {
  return decide(await readDestinationRecord(sink), input);
}

/** Writes the record when the run changed it: after the lease is held, before any request. */
export async function recordDestination(sink: DestinationStore, g: GuardResult): Promise<void> {
  if (g.changed) await writeDestinationRecord(sink, g.record);
}

/** The decision alone, for a record already read (undefined: nothing was written to the destination yet). */
export function decide(existing: DestinationRecord | undefined, input: GuardInput): GuardResult {
  checkPolicyColumns(input.personalData.columns ?? {}, input.tables, existing?.fields_seen);
  const personal = bareRecord(input.personalData);
  const fingerprint = policyFingerprint(personal);
  const since = { run_id: input.runId, at: input.now.toISOString() };
  if (!existing) {
    const record: DestinationRecord = { version: 1, format: input.format, personal_data: personal, fingerprint, since };
    const notes = isKeepAll(policyOf(personal))
      ? []
      : [
          `this destination now keeps its ${describePolicy(personal)}: a later run with a weaker policy or another key stops unless --personal-data-change`,
        ];
    return { record, changed: true, notes, tightened: false };
  }
  const notes: string[] = [];
  // a record inferred from the manifests is written as it is, so the next run reads it instead
  const { inferred_from: inferred, ...base } = existing;
  let record: DestinationRecord = base;
  let changed = inferred !== undefined;
  let formatChange: GuardResult['formatChange'];
  if (existing.format !== input.format) {
    if (!input.accept.formatChange) {
      throw new ExportError(
        'E_FORMAT_CHANGE',
        `${input.dest} holds ${existing.format} files (since run ${existing.since.run_id}); this run would write ${input.format}: pass --format ${existing.format}, or --format-change to write ${input.format} from now on (the DuckDB loader reads both; the BigQuery and Snowflake scripts read Parquet only)`,
      );
    }
    formatChange = { from: existing.format, to: input.format, by: input.by, at: since.at };
    notes.push(
      `format changed from ${existing.format} to ${input.format} (--format-change, by ${input.by}): this destination now holds both`,
    );
    record = { ...record, format: input.format };
    changed = true;
  }
  let change: PolicyChangeRecord | undefined;
  let tightened = false;
  if (existing.fingerprint !== fingerprint) {
    const diffs = comparePolicies(existing.personal_data, personal, input.tables);
    const refused = diffs.filter((d) => d.kind !== 'stricter');
    const listed = diffs.map(describeDifference);
    if (refused.length && !input.accept.personalDataChange) {
      const what = refused.every((d) => d.kind === 'key') ? 'uses another pseudonymisation key than' : 'is weaker than';
      throw new ExportError(
        'E_POLICY_CHANGE',
        `this run's personal-data policy ${what} the one ${input.dest} keeps (recorded by run ${existing.since.run_id}): ${listed.join('; ')}. Run with the destination's policy (school-export datamap --dest shows it), or pass --personal-data-change to accept the change (recorded in the manifest)`,
      );
    }
    tightened = tightens(diffs);
    const kind = refused.length ? 'accepted' : 'stricter';
    change = { kind, by: input.by, at: since.at, from: existing.personal_data, differences: listed };
    notes.push(
      kind === 'stricter'
        ? `personal-data policy stricter than the destination's (since run ${existing.since.run_id}): ${listed.join('; ')}. Every resource is read again in full, and each school's files written under the weaker policy are deleted once all its resources are replaced`
        : `personal-data policy changed with --personal-data-change by ${input.by}: ${listed.join('; ')}. Every resource is read again in full${tightened ? ", and each school's files written under the earlier policy are deleted once all its resources are replaced" : ''}`,
    );
    record = withEarlier(existing, { ...record, personal_data: personal, fingerprint, since: { ...since, by: input.by } }, input.runId);
    changed = true;
  }
  return {
    record,
    changed,
    notes,
    tightened,
    ...(change ? { change } : {}),
    ...(formatChange ? { formatChange } : {}),
  };
}
