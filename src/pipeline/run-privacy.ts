/**
 * A run's personal-data bookkeeping around its tasks (issue 22), kept out of run.ts:
 *
 *   destinationGuard()    before the lease and any request: the destination's record (policy,
 *                         key, format) against the run's; refusals are exit 2, nothing written
 *   startPersonalData()   the manifest's personal_data (with the change, if any) and the
 *                         tightening that watches each commit
 *   finishPersonalData()  after the tasks: purges what a tightening replaced, gives the manifest
 *                         each policy entry's columns, then (summary) what happened to each
 *                         undeclared field and which fields the destination has now seen
 */
import type { RunConfig } from '../config/resolve.ts';
import type { Committer } from '../manifest/committer.ts';
import type { Manifest, PersonalDataRecord } from '../manifest/types.ts';
import { readRecordFile, sortedFields, writeDestinationRecord } from '../privacy/destination.ts';
import { changedBy, checkDestination, recordDestination, type GuardResult } from '../privacy/guard.ts';
import type { PersonalData } from '../privacy/personal-data.ts';
import { policyRecord } from '../privacy/policy.ts';
import { fieldActions, hasEntries, policyMatches, type FieldAction } from '../privacy/report.ts';
import { Tightening } from '../privacy/tighten.ts';
import { selectResources, tableSchemas } from '../resources/index.ts';
import type { Sink } from '../sink/types.ts';
import type { TableSchema } from '../table.ts';
import { openForReading } from './dest-reader.ts';

export interface RunPrivacy {
  personalData: PersonalData;
  /** Every table the configuration knows (built-in and custom). */
  tables: TableSchema[];
  /** Child tables of includes (their fields are not in the API contract): reported apart from drift. */
  includeTables: string[];
  guard: GuardResult;
  tightening: Tightening;
  sink: Sink;
  /** The manifest's personal_data: the policy applied, and the change this run made. */
  manifestRecord: PersonalDataRecord;
  /** The committer's header: its personal_data gets the matched columns before the run manifest is written. */
  header?: { personal_data?: PersonalDataRecord };
}

/** Every table the configuration knows, and the tables of includes. */
function knownTables(cfg: RunConfig): { tables: TableSchema[]; includeTables: string[]; resources: string[] } {
  const specs = selectResources(undefined, cfg.customResources);
  return {
    tables: specs.flatMap((r) => tableSchemas(r)),
    includeTables: specs.flatMap((r) => (r.children ?? []).map((c) => c.table)),
    resources: specs.map((r) => r.name),
  };
}

/** Reads the destination's record and decides; `record()` writes it (once the lease is held). */
export async function destinationGuard(
  cfg: RunConfig,
  sink: Sink,
  runId: string,
  now: Date,
): Promise<{ result: GuardResult; record: () => Promise<void> }> {
  const result = await checkDestination(sink, {
    personalData: policyRecord(cfg.personalData.policy, cfg.personalData.key),
    format: cfg.format,
    tables: knownTables(cfg).tables,
    accept: { personalDataChange: cfg.personalDataChange === true, formatChange: cfg.formatChange === true },
    runId,
    now,
    by: changedBy(),
    dest: cfg.dest,
  });
  return { result, record: () => recordDestination(sink, result) };
}

/** The same check on the destination opened read-only (a new local one is not even created): a refusal writes nothing. */
export async function checkBeforeWriting(cfg: RunConfig, runId: string, now: Date): Promise<void> {
  // a destination that cannot be read this way (a file, a dangling link) is named by opening it to write
  const reading = await openForReading(cfg).catch(() => undefined);
  if (!reading) return;
  try {
    await destinationGuard(cfg, reading, runId, now);
  } finally {
    await reading.close();
  }
}

export function startPersonalData(
  cfg: RunConfig,
  sink: Sink,
  o: { runId: string; personalData: PersonalData; guard: GuardResult },
): RunPrivacy {
  const { tables, includeTables, resources } = knownTables(cfg);
  return {
    personalData: o.personalData,
    tables,
    includeTables,
    guard: o.guard,
    sink,
    tightening: new Tightening({ sink, record: o.guard.record, runId: o.runId, shard: cfg.shard, tables, resources }),
    manifestRecord: { ...o.personalData.record, ...(o.guard.change ? { change: o.guard.change } : {}) },
  };
}

export interface FinishedPersonalData {
  notes: string[];
  /** Files of a weaker policy that should have gone are still there: the run must not end as ok. */
  failed: boolean;
  /** For the summary, once the run manifest is written; also records the fields the destination has seen. */
  summary(m: Manifest): Promise<{ includeTables: string[]; fieldActions: Record<string, Record<string, FieldAction>> }>;
}

export async function finishPersonalData(p: RunPrivacy, committer: Committer, o: { interrupted: boolean }): Promise<FinishedPersonalData> {
  const notes = [...p.guard.notes];
  let failed = false;
  if (!o.interrupted) {
    try {
      const t = await p.tightening.finish(new Date());
      const files = t.purged.reduce((n, x) => n + x.files_removed, 0);
      if (t.purged.length) {
        notes.push(
          `${files} file(s) written under a weaker personal-data policy deleted at ${t.purged.length} school(s), replaced by this policy's full reads (recorded as a purge in ${t.manifests.join(', ')}: loaders drop those rows)`,
        );
      }
      if (t.waiting.length) {
        notes.push(
          `${t.waiting.length} school(s) still hold files written under a weaker personal-data policy until each of their resources is read again (${t.waiting.slice(0, 5).join(', ')}${t.waiting.length > 5 ? ', …' : ''})`,
        );
      }
      for (const problem of t.problems)
        notes.push(`files written under a weaker personal-data policy were not all deleted: ${problem}; the next run tries again`);
      failed = t.problems.length > 0;
    } catch (e) {
      notes.push(`files written under a weaker personal-data policy were not deleted (${(e as Error).message}); the next run tries again`);
      failed = true;
    }
  }
  const policy = p.personalData.policy;
  if (p.header && hasEntries(policy)) {
    p.header.personal_data = { ...p.manifestRecord, matched: policyMatches(committer.snapshot().tasks, p.tables, policy) };
  }
  return {
    notes,
    failed,
    summary: async (m) => {
      const drift: Record<string, Set<string>> = {};
      for (const t of m.tasks)
        for (const [table, f] of Object.entries(t.drift_fields ?? {})) for (const x of f) (drift[table] ??= new Set()).add(x);
      await noteFieldsSeen(p.sink, drift).catch(() => undefined); // only datamap and override checks read it; the next run adds them again
      const names = Object.fromEntries(Object.entries(drift).map(([t, f]) => [t, [...f]]));
      return { includeTables: p.includeTables, fieldActions: fieldActions(names, p.tables, policy) };
    },
  };
}

/** Adds the undeclared fields this run saw to the destination's record, when any is new. */
async function noteFieldsSeen(sink: Sink, drift: Record<string, Set<string>>): Promise<void> {
  const r = await readRecordFile(sink);
  if (!r) return;
  const seen = r.fields_seen ?? {};
  const grown = Object.entries(drift).some(([t, f]) => [...f].some((x) => !seen[t]?.includes(x)));
  if (!grown) return;
  const merged: Record<string, Iterable<string>> = { ...seen };
  for (const [t, f] of Object.entries(drift)) merged[t] = [...(seen[t] ?? []), ...f];
  await writeDestinationRecord(sink, { ...r, fields_seen: sortedFields(merged) });
}
