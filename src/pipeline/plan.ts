import { ExportError, oneLine } from '../errors.ts';
import { assertSafeId, assertSafeRegion, compareIds } from '../ids.ts';
import { snapshotDue, updatedAfterParam } from '../manifest/state.ts';
import type { ResourceState, SchoolDirective, SchoolState } from '../manifest/types.ts';
import type { ResourceSpec } from '../resources/index.ts';
import type { ApiClient } from '../source/client.ts';
import type { SchoolRef, TaskPlan } from './task.ts';
import { shardOf } from './shard.ts';
import { SharedStrings } from './shared-strings.ts';

export interface DiscoveredSchools {
  schools: SchoolRef[];
  /** Schools that will not be exported, with the reason (unsafe id, domain not configured, not found). */
  problems: { schoolId: string; region: string; error: ExportError }[];
  /** Every id /schools listed, before --schools and --shard: the schools that still approve access. */
  approved: Set<string>;
}

/** The approved schools, filtered by --schools and --shard, each checked before it becomes a path. */
export async function discoverSchools(
  client: ApiClient,
  o: { only?: string[]; shard: { index: number; count: number }; perPage: number },
): Promise<DiscoveredSchools> {
  const schools: SchoolRef[] = [];
  const problems: DiscoveredSchools['problems'] = [];
  const wanted = o.only ? new Set(o.only) : undefined;
  const found = new Set<string>();
  const approved = new Set<string>();
  for await (const batch of client.paginate('/schools', { mode: 'cursor', perPage: o.perPage, ctx: { endpoint: '/schools' } })) {
    for (const raw of batch.rows as Record<string, unknown>[]) {
      const id = raw?.id;
      approved.add(String(id));
      if (wanted && !wanted.has(String(id))) continue;
      found.add(String(id));
      if (shardOf(String(id), o.shard.count) !== o.shard.index) continue;
      try {
        schools.push(checkSchool(client, raw));
      } catch (e) {
        const region = (raw?.region ?? {}) as { code?: unknown };
        const err = e instanceof ExportError ? e : new ExportError('E_PROTOCOL', oneLine(e));
        problems.push({ schoolId: String(id).slice(0, 40), region: String(region.code ?? '?').slice(0, 20), error: err });
      }
    }
  }
  for (const id of wanted ?? []) {
    if (!found.has(id) && shardOf(id, o.shard.count) === o.shard.index) {
      const message = `school ${id} is not among the schools that approved access (see: school-export schools list --state all)`;
      problems.push({ schoolId: id, region: '?', error: new ExportError('E_NOT_FOUND', message, { school: id }) });
    }
  }
  schools.sort((a, b) => compareIds(a.id, b.id));
  return { schools, problems, approved };
}

/** A school from discovery, with its id, region and domain checked before they become paths or hosts. */
function checkSchool(client: ApiClient, raw: Record<string, unknown>): SchoolRef {
  const region = (raw?.region ?? {}) as { code?: unknown; domain?: unknown };
  const schoolId = assertSafeId(raw?.id);
  const code = assertSafeRegion(region.code);
  const domain = typeof region.domain === 'string' && region.domain ? region.domain.toLowerCase() : undefined;
  if (!client.isAllowed(domain)) {
    throw new ExportError(
      'E_DOMAIN_NOT_ALLOWED',
      `school ${schoolId}: its region domain ${domain} is not configured, so the token is not sent there; add --domain ${domain}=https://${domain} (or "domains" in the pipeline file) to export it`,
      { school: schoolId },
    );
  }
  return { id: schoolId, region: code, domain, record: raw };
}

/** The settings planning reads (a slice of RunConfig, so tests can state only these). */
export interface PlanSettings {
  fullRefresh: boolean;
  lookbackSeconds: number;
  snapshotEveryHours: (resource: string) => number;
  /** updated_at windows for a full paginated read (1: one cursor walk). */
  windows: number;
  /** Fingerprint of the run's personal-data policy (absent: 'keep'). */
  personalData?: string;
}

/**
 * Whether a resource of a school is read in full or incrementally, and why. Full: the first run,
 * --full-refresh, a directive (approval, migration: ids change), a resource without updated_after,
 * a snapshot that is due (tables without deletion records), or columns that were null for lack of
 * scope and now are not (so the warehouse gets their values). A read committed up to a checkpoint
 * resumes unless a directive says the ids changed.
 */
export function planTask(
  school: SchoolRef,
  spec: ResourceSpec,
  state: SchoolState,
  o: { directive?: SchoolDirective; settings: PlanSettings; now: Date; scopeMasked: string[] },
): TaskPlan {
  const prev: ResourceState | undefined = state.resources[spec.name];
  // A different personal-data policy or key restarts the read like a migration: rows read before
  // were transformed otherwise, and a full read lets loaders replace them (docs/personal-data.md).
  const repolicy = prev !== undefined && (prev.personal_data ?? 'keep') !== (o.settings.personalData ?? 'keep');
  const directed = o.directive ? o.directive.force_full_seq > (prev?.applied_force_full_seq ?? 0) : false;
  const forced = directed || repolicy;
  const common = {
    school,
    spec,
    knownIdsFile: forced ? undefined : prev?.known_ids_file,
    forceFullSeq: o.directive?.force_full_seq,
    scopeMasked: o.scopeMasked,
    previousWatermark: forced || o.settings.fullRefresh || !prev?.watermark ? null : watermarks.of(prev.watermark),
    windows: o.settings.windows,
    lastContent:
      o.settings.fullRefresh || !prev?.content ? undefined : { sha256: prev.content.sha256, run_id: runIds.of(prev.content.run_id) },
  };
  const resume = prev?.checkpoint;
  if (resume && resumable(resume, o, directed)) {
    const mode = resume.updated_after ? 'incremental' : 'full';
    const reason = `resuming ${mode === 'full' ? 'a full' : 'an incremental'} read committed up to page ${resume.pages}`;
    const previousWatermark = forcedBefore(resume, o) ? null : common.previousWatermark;
    return taskPlan({ ...common, previousWatermark, mode, updatedAfter: resume.updated_after, resume, reason });
  }
  const abandonedIds = resume?.ids_files?.length ? resume.ids_files : undefined;
  const reason = fullReason(spec, prev, forced, o, repolicy);
  if (reason || !prev?.watermark) return taskPlan({ ...common, abandonedIds, mode: 'full', reason: reason ?? 'first run' });
  const watermark = prev.watermark;
  const updatedAfter = updatedAfters.of(`${o.settings.lookbackSeconds} ${watermark}`, () =>
    updatedAfterParam(watermark, o.settings.lookbackSeconds),
  );
  return taskPlan({
    ...common,
    abandonedIds,
    mode: 'incremental',
    updatedAfter,
    reason: reasons.of(`changes since the watermark ${watermark}`),
  });
}

/**
 * Every plan with the same fields in the same order, absent ones undefined: a run holds a plan for
 * every task of every school until the task starts, and plans spread from optional parts took a
 * hidden class of their own each (330 of a plan's 674 bytes in a heap snapshot of a 2,000-school
 * night), as did the fields added once the school was probed.
 */
function taskPlan(p: TaskPlan): TaskPlan {
  return {
    school: p.school,
    spec: p.spec,
    mode: p.mode,
    updatedAfter: p.updatedAfter,
    knownIdsFile: p.knownIdsFile,
    resume: p.resume,
    forceFullSeq: p.forceFullSeq,
    scopeMasked: p.scopeMasked,
    scopeGuarded: p.scopeGuarded,
    previousWatermark: p.previousWatermark,
    reason: p.reason,
    abandonedIds: p.abandonedIds,
    windows: p.windows,
    prefetched: p.prefetched,
    lastContent: p.lastContent,
  };
}

/** Texts many plans hold equal (shared-strings.ts), one table for each kind. */
const runIds = new SharedStrings();
const watermarks = new SharedStrings();
const updatedAfters = new SharedStrings();
const reasons = new SharedStrings();

type Checkpoint = NonNullable<ResourceState['checkpoint']>;

/**
 * A saved read goes on while what it began under still holds: the same directive generation (a
 * forced read keeps its checkpoints; only a newer approval or migration restarts it), the same
 * personal-data policy and key, no column read as null then that is readable now, and no
 * --full-refresh for an incremental read.
 */
function resumable(
  r: Checkpoint,
  o: { directive?: SchoolDirective; settings: PlanSettings; scopeMasked: string[] },
  directed: boolean,
): boolean {
  if (r.updated_after && o.settings.fullRefresh) return false;
  if ((r.personal_data ?? 'keep') !== (o.settings.personalData ?? 'keep')) return false;
  if ((r.scope_masked ?? []).some((c) => !o.scopeMasked.includes(c))) return false;
  if (!directed) return true;
  return (o.directive?.force_full_seq ?? 0) <= (r.force_full_seq ?? -1);
}

/** The saved read itself was forced: it starts its watermark afresh, as it did when it began. */
function forcedBefore(r: Checkpoint, o: { directive?: SchoolDirective }): boolean {
  return r.force_full_seq !== undefined && o.directive !== undefined && r.force_full_seq === o.directive.force_full_seq;
}

function fullReason(
  spec: ResourceSpec,
  prev: ResourceState | undefined,
  forced: boolean,
  o: { settings: PlanSettings; now: Date; scopeMasked: string[] },
  repolicy = false,
): string | undefined {
  if (!spec.incremental) return 'always read in full';
  if (o.settings.fullRefresh) return '--full-refresh';
  if (forced) return repolicy ? 'personal-data policy or key changed' : 'directive (approval or migration)';
  if (!prev?.watermark) return 'first run';
  const snapshots = !spec.deletionType && spec.name !== 'deletions';
  if (snapshots && snapshotDue(prev?.last_full_at, o.settings.snapshotEveryHours(spec.name), o.now)) return 'snapshot due';
  if (prev?.scope_masked?.some((c) => !o.scopeMasked.includes(c))) return 'scope widened';
  return undefined;
}
