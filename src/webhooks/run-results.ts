import pLimit from 'p-limit';
import { readDirective } from '../manifest/state-store.ts';
import { readRun, runDocsOf } from '../manifest/layout.ts';
import type { ManifestTask } from '../manifest/types.ts';
import type { Sink } from '../sink/types.ts';
import type { RunOutcome } from './child-run.ts';

/**
 * What a run the receiver started did for each of its schools, read from the run's manifest (the
 * commit record), never guessed from the exit status alone:
 * - exported: every task of the school committed;
 * - retry: some task failed or was interrupted, or the run left no manifest (it could not take the
 *   lease, crashed, was killed): a later run may succeed;
 * - deferred: the run skipped the school for a reason of the school's (inactive, not approved,
 *   domain not allowed): retrying now would not help, the next nightly run tries again;
 * - dropped: access was revoked or declined meanwhile (the directive says so).
 */
export type SchoolResult =
  { kind: 'exported' } | { kind: 'retry'; reason: string } | { kind: 'deferred'; reason: string } | { kind: 'dropped'; reason: string };

const DONE = new Set(['committed', 'unchanged']);
const RETRY = new Set(['failed', 'interrupted', 'not_started']);

/**
 * The tasks a run listed: its whole-run manifest and any parts beside it (a killed run has parts
 * only). `final` is false when there is no whole-run manifest: the run did not get to the end, so
 * which of a school's tasks it planned is unknown.
 * Read through src/manifest/layout.ts (the run manifest names its parts; an old one lists its
 * tasks). Unreadable documents read as no tasks: the schools are then retried.
 */
export async function readRunTasks(sink: Sink, runId: string): Promise<{ final: boolean; tasks: ManifestTask[] }> {
  try {
    const run = await readRun(sink, await runDocsOf(sink, runId));
    return { final: run.header !== undefined && run.header.status !== 'running', tasks: run.tasks };
  } catch {
    return { final: false, tasks: [] };
  }
}

export async function schoolResults(sink: Sink, schools: string[], outcome: RunOutcome): Promise<Map<string, SchoolResult>> {
  const out = new Map<string, SchoolResult>();
  const run = outcome.runId ? await readRunTasks(sink, outcome.runId) : { final: false, tasks: [] };
  const bySchool = new Map<string, ManifestTask[]>();
  for (const t of run.tasks) bySchool.set(t.school_id, [...(bySchool.get(t.school_id) ?? []), t]);
  const ended = describeEnd(outcome);
  const limit = pLimit(16); // directive reads are S3 GETs on an S3 destination
  const directives = await Promise.all(schools.map((id) => limit(() => readDirective(sink, id).catch(() => undefined))));
  schools.forEach((id, i) => {
    const off = directives[i]?.deactivated;
    if (off) out.set(id, { kind: 'dropped', reason: `access ${off.event}: ${off.reason}` });
    else out.set(id, run.final ? fromTasks(bySchool.get(id) ?? []) : { kind: 'retry', reason: ended });
  });
  return out;
}

function fromTasks(tasks: ManifestTask[]): SchoolResult {
  if (tasks.length === 0) return { kind: 'deferred', reason: 'the run planned nothing for it' };
  const status = (t: ManifestTask): string => t.status;
  const failed = tasks.find((t) => RETRY.has(status(t)) || (DONE.has(status(t)) && t.error));
  if (failed) return { kind: 'retry', reason: `${failed.resource}: ${failed.error?.message ?? failed.status}` };
  const skipped = tasks.find((t) => !DONE.has(status(t)));
  if (skipped) {
    const reason = skipped.error?.message ?? `${skipped.resource} ${skipped.status}`;
    return skipped.error?.code === 'E_PURGED' ? { kind: 'dropped', reason } : { kind: 'deferred', reason };
  }
  return { kind: 'exported' };
}

function describeEnd(o: RunOutcome): string {
  const how = o.signal ? `was killed (${o.signal})` : o.code === null ? 'did not run' : `exited ${o.code}`;
  const why = o.error ? `: ${o.error}` : o.runId ? ' without a run manifest' : '';
  return `the run ${how}${why}`;
}
