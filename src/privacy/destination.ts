/**
 * What a destination keeps from run to run (issue 22): the format its files are written in and
 * the personal-data policy its rows are written under, in `_state/_destination.json`, one small
 * object written whole. It is read at the start of every run, before any request, so a run that
 * would weaken the policy, change the key or mix formats stops before it reads or writes
 * anything; it is written when a run starts with a new policy or format (and when a run saw
 * undeclared fields no run saw before). Destinations written before the record existed get one
 * inferred from their manifests, once.
 */
import pLimit from 'p-limit';
import { ExportError } from '../errors.ts';
import { listRuns, readHeader, runTasks } from '../manifest/layout.ts';
import type { Manifest, ManifestTask, PersonalDataRecord } from '../manifest/types.ts';
import type { DestinationStore } from './store.ts';
import { KEEP_ALL, policyFingerprint, policyRecord } from './policy.ts';

export const DESTINATION_RECORD = '_state/_destination.json';
/** Earlier policies kept in the record: enough to tell what a resource's rows were written under. */
const EARLIER_KEPT = 20;

export interface DestinationRecord {
  version: 1;
  /** The format of every file written here (a change needs --format-change). */
  format: Manifest['format'];
  /** The policy rows are written under: applied actions, overrides and the key's fingerprint (never the key). */
  personal_data: PersonalDataRecord;
  /** policyFingerprint(personal_data): what each resource's state records its rows were written under. */
  fingerprint: string;
  /** The run that recorded this policy (or format), and who ran it when the policy changed. */
  since: { run_id: string; at: string; by?: string };
  /** The policies held before, newest first: what older rows were written under. */
  earlier?: { fingerprint: string; personal_data: PersonalDataRecord; until_run: string }[];
  /** Undeclared fields seen by the destination's runs, per table (names of fields are not personal data). */
  fields_seen?: Record<string, string[]>;
  /** Set on a record inferred from the manifests of a destination written before records existed. */
  inferred_from?: string;
}

/** The policy part of a manifest's personal_data (what a destination records). */
export function bareRecord(r: PersonalDataRecord | undefined): PersonalDataRecord {
  if (!r) return policyRecord(KEEP_ALL);
  return {
    person_id: r.person_id,
    direct_identifier: r.direct_identifier,
    free_text: r.free_text,
    ...(r.columns && Object.keys(r.columns).length ? { columns: { ...r.columns } } : {}),
    ...(r.key_id ? { key_id: r.key_id } : {}),
  };
}

/** The record, or one inferred from the manifests, or undefined for a destination nothing was written to. */
export async function readDestinationRecord(sink: DestinationStore): Promise<DestinationRecord | undefined> {
  return (await readRecordFile(sink)) ?? inferRecord(sink);
}

/** The record as written, or undefined when there is none (nothing inferred). */
export async function readRecordFile(sink: DestinationStore): Promise<DestinationRecord | undefined> {
  const buf = await sink.read(DESTINATION_RECORD);
  return buf ? parseRecord(buf) : undefined;
}

export async function writeDestinationRecord(sink: DestinationStore, r: DestinationRecord): Promise<void> {
  await sink.writeAtomic(DESTINATION_RECORD, JSON.stringify(r, null, 2) + '\n');
}

function parseRecord(buf: Buffer): DestinationRecord {
  try {
    const r = JSON.parse(buf.toString('utf8')) as DestinationRecord;
    if (r.version !== 1 || typeof r.format !== 'string' || typeof r.fingerprint !== 'string' || typeof r.personal_data !== 'object') {
      throw new Error('unexpected shape');
    }
    return r;
  } catch (e) {
    throw new ExportError(
      'E_STATE',
      `${DESTINATION_RECORD} is unreadable (${(e as Error).message}): delete it and the next run records the format and personal-data policy of the destination's latest run again`,
    );
  }
}

/** `newer` with the policy of `r` kept among the earlier ones (newest first, bounded). */
export function withEarlier(r: DestinationRecord, newer: Omit<DestinationRecord, 'earlier'>, untilRun: string): DestinationRecord {
  const earlier = [
    { fingerprint: r.fingerprint, personal_data: r.personal_data, until_run: untilRun },
    ...(r.earlier ?? []).filter((e) => e.fingerprint !== r.fingerprint),
  ].filter((e) => e.fingerprint !== newer.fingerprint);
  return { ...newer, ...(earlier.length ? { earlier: earlier.slice(0, EARLIER_KEPT) } : {}) };
}

/** The record of an earlier policy by fingerprint ('keep' needs none). */
export function earlierPolicy(r: DestinationRecord, fingerprint: string): PersonalDataRecord | undefined {
  if (fingerprint === 'keep') return policyRecord(KEEP_ALL);
  if (fingerprint === r.fingerprint) return r.personal_data;
  return r.earlier?.find((e) => e.fingerprint === fingerprint)?.personal_data;
}

/** Manifests read to infer a record: the newest runs say the format and policy, and most fields sent. */
const INFER_FROM = 30;

/**
 * A destination written before records existed: the format and policy of its latest run (a
 * purge's manifest says neither), and the undeclared fields its newest manifests list. Read once:
 * the run then writes the record. Only the newest whole-run manifests are read, newest first, so
 * a destination with years of runs costs a few reads, not all of them.
 */
async function inferRecord(sink: DestinationStore): Promise<DestinationRecord | undefined> {
  // finished runs (a run manifest), purges left out, newest first; read through src/manifest/layout.ts
  const runs = (await listRuns(sink))
    .filter((r) => r.manifest && !r.runId.includes('-purge-'))
    .reverse()
    .slice(0, INFER_FROM);
  if (runs.length === 0) return undefined;
  const limit = pLimit(8);
  const docs = await Promise.all(
    runs.map((r) =>
      limit(async () => {
        try {
          const header = await readHeader(sink, r.manifest!);
          // only what is inferred is kept of the tasks, read part by part
          const tasks: Pick<ManifestTask, 'drift_fields'>[] = [];
          for await (const batch of runTasks(sink, r))
            for (const t of batch) if (t.drift_fields) tasks.push({ drift_fields: t.drift_fields });
          return { path: r.manifest!.path, m: { ...header, tasks } as unknown as Manifest };
        } catch {
          return undefined; // an unreadable manifest says nothing about the policy; loaders report it
        }
      }),
    ),
  );
  const fields: Record<string, Set<string>> = {};
  let latest: { path: string; m: Manifest } | undefined;
  for (const d of docs) {
    if (!d || d.m === null || typeof d.m !== 'object' || typeof d.m.format !== 'string') continue;
    latest ??= d; // newest first
    for (const t of Array.isArray(d.m.tasks) ? d.m.tasks : [])
      for (const [table, f] of Object.entries(t.drift_fields ?? {})) for (const x of f) (fields[table] ??= new Set()).add(x);
  }
  if (!latest) return undefined;
  const personal = bareRecord(latest.m.personal_data);
  return {
    version: 1,
    format: latest.m.format,
    personal_data: personal,
    fingerprint: policyFingerprint(personal),
    since: { run_id: String(latest.m.run_id), at: String(latest.m.started_at) },
    ...(Object.keys(fields).length ? { fields_seen: sortedFields(fields) } : {}),
    inferred_from: latest.path,
  };
}

export function sortedFields(fields: Record<string, Iterable<string>>): Record<string, string[]> {
  return Object.fromEntries(
    Object.entries(fields)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([t, f]) => [t, [...new Set(f)].sort()]),
  );
}
