/**
 * What `status` says about personal data (issue 22): the policy and format the destination keeps,
 * and while any school still holds files written under a weaker policy (or another key): its
 * resources not read again under the current policy yet, or read again and waiting for the purge
 * at the end of a run (tighten.ts). Read from the destination's record and the states status
 * reads anyway: no extra request per school.
 */
import type { PersonalDataRecord, SchoolState } from '../manifest/types.ts';
import { RESOURCES, tableSchemas } from '../resources/index.ts';
import { comparePolicies, tightens } from './compare.ts';
import { earlierPolicy, readRecordFile, type DestinationRecord } from './destination.ts';
import { describePolicy } from './policy.ts';
import type { DestinationStore } from './store.ts';

export interface PolicyStatus {
  type: 'personal_data';
  format: string;
  policy: PersonalDataRecord;
  /** The run that recorded the policy in force (and who, when it was a change). */
  since_run: string;
  since_by?: string;
  /** Schools holding files written under a weaker policy, sorted. */
  weaker_schools: string[];
  /** (school, resource) whose rows are still those of a weaker policy: not read again yet. */
  weaker_resources: number;
  /** Schools whose resources were all read again, waiting for the purge at the end of a run. */
  awaiting_purge: number;
}

/** undefined for a destination without a record (nothing written since records exist). */
export async function policyStatus(store: DestinationStore, states: readonly SchoolState[]): Promise<PolicyStatus | undefined> {
  const record = await readRecordFile(store);
  return record ? policyStatusOf(record, states) : undefined;
}

export function policyStatusOf(record: DestinationRecord, states: readonly SchoolState[]): PolicyStatus {
  const tables = RESOURCES.flatMap((r) => tableSchemas(r));
  const verdicts = new Map<string, boolean>();
  const weaker = (fp: string): boolean => {
    if (fp === record.fingerprint) return false;
    if (!verdicts.has(fp)) {
      const old = earlierPolicy(record, fp);
      verdicts.set(fp, !old || tightens(comparePolicies(old, record.personal_data, tables)));
    }
    return verdicts.get(fp)!;
  };
  const schools = new Set<string>();
  let resources = 0;
  let awaiting = 0;
  for (const s of states) {
    const stale = Object.values(s.resources).filter((r) => r.last_run_id && weaker(r.personal_data ?? 'keep')).length;
    const marked = Object.values(s.resources).some((r) => r.purge_before !== undefined);
    resources += stale;
    if (marked && stale === 0) awaiting += 1;
    if (stale || marked) schools.add(s.school_id);
  }
  return {
    type: 'personal_data',
    format: record.format,
    policy: record.personal_data,
    since_run: record.since.run_id,
    ...(record.since.by ? { since_by: record.since.by } : {}),
    weaker_schools: [...schools].sort(),
    weaker_resources: resources,
    awaiting_purge: awaiting,
  };
}

/** The lines `status` prints on a terminal. */
export function policyStatusLines(p: PolicyStatus): string[] {
  const by = p.since_by ? ` by ${p.since_by}` : '';
  const lines = [`${describePolicy(p.policy)}; format ${p.format} (since run ${p.since_run}${by})`];
  if (p.weaker_schools.length) {
    const some = p.weaker_schools.slice(0, 10).join(', ') + (p.weaker_schools.length > 10 ? ', …' : '');
    lines.push(
      `STILL HOLDS DATA WRITTEN UNDER A WEAKER PERSONAL-DATA POLICY at ${p.weaker_schools.length} school(s) (${some}): ` +
        `${p.weaker_resources} resource(s) not read again yet, ${p.awaiting_purge} school(s) read again and waiting for the purge at the end of the next run`,
    );
  }
  return lines;
}
