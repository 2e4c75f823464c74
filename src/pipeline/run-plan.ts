import pLimit from 'p-limit';
import type { RunConfig } from '../config/resolve.ts';
import { ExportError, asExportError } from '../errors.ts';
import { readDirective, readState } from '../manifest/state-store.ts';
import type { ManifestTask, SchoolDirective, SchoolState } from '../manifest/types.ts';
import type { ResourceSpec } from '../resources/types.ts';
import type { Sink } from '../sink/types.ts';
import type { ApiClient } from '../source/client.ts';
import { discoverSchools, planTask, selectResources, type PlanSettings } from './plan.ts';
import type { Reporter } from './progress.ts';
import { PROPERTY_SCOPES } from '../resources/scopes.ts';
import { PERMISSIONS_PATH, probeSchool, type SchoolProbe } from './school-probe.ts';
import type { SchoolRef, TaskPlan } from './task.ts';

/** Everything a run will do, decided before any data request: what --dry-run prints. */
export interface RunPlan {
  /** Schools discovered for this run (after --schools and --shard). */
  schools: number;
  tasks: TaskPlan[];
  /** Schools that will not be exported, as manifest entries with the reason. */
  skipped: ManifestTask[];
  /** Schools whose access was revoked or declined (webhook directives). */
  deactivated: string[];
  /** school -> "table.column" values that will be null for lack of scope. */
  scopeMasked: Record<string, string[]>;
  notes: string[];
  /** Set when the run has nothing to export at all (which is a failure: cron must notice). */
  nothingToDo?: string;
}

type PlanIo = { client: ApiClient; sink: Sink; reporter: Reporter };

export async function planRun(cfg: RunConfig, io: PlanIo, o: { now: Date }): Promise<RunPlan> {
  const resources = selectResources(cfg.resources, cfg.customResources);
  const discovered = await discoverSchools(io.client, { only: cfg.schools, shard: cfg.shard, perPage: cfg.perPage });
  const plan: RunPlan = { schools: discovered.schools.length, tasks: [], skipped: [], deactivated: [], scopeMasked: {}, notes: [] };
  for (const p of discovered.problems) skipSchool(plan, io.reporter, { id: p.schoolId, region: p.region }, p.error);
  const settings: PlanSettings = {
    fullRefresh: cfg.fullRefresh,
    lookbackSeconds: cfg.lookbackSeconds,
    snapshotEveryHours: cfg.snapshotEveryHoursFor,
  };
  // State and directive reads and the probe are independent per school (S3 GETs, one request).
  const limit = pLimit(16);
  await Promise.all(discovered.schools.map((school) => limit(() => planSchool(school, resources, { ...io, plan, settings, now: o.now }))));
  plan.tasks.sort((a, b) => a.school.id.localeCompare(b.school.id, 'en', { numeric: true }));
  if (discovered.schools.length === 0) plan.nothingToDo = nothingMessage(cfg, discovered.problems.length);
  return plan;
}

function nothingMessage(cfg: RunConfig, problems: number): string {
  if (cfg.schools?.length) return `none of the schools asked for (--schools ${cfg.schools.join(',')}) can be exported here`;
  if (problems) return 'no discovered school can be exported (see the skipped schools above)';
  const shard = cfg.shard.count > 1 ? ` in shard ${cfg.shard.index}/${cfg.shard.count}` : '';
  return `no school has approved access for this token${shard}: nothing was exported`;
}

async function planSchool(
  school: SchoolRef,
  resources: ResourceSpec[],
  o: PlanIo & { plan: RunPlan; settings: PlanSettings; now: Date },
): Promise<void> {
  let state: SchoolState;
  let directive: SchoolDirective | undefined;
  try {
    [state, directive] = await Promise.all([readState(o.sink, school.region, school.id), readDirective(o.sink, school.id)]);
  } catch (e) {
    return skipSchool(o.plan, o.reporter, school, asExportError(e, 'E_STATE', { school: school.id }), 'failed');
  }
  if (directive?.deactivated) {
    o.plan.deactivated.push(school.id);
    o.reporter.emit({
      event: 'school_skipped',
      school_id: school.id,
      reason: `access ${directive.deactivated.event}: ${directive.deactivated.reason}`,
    });
    return;
  }
  const planAll = (masked: string[]) =>
    resources.map((spec) =>
      planTask(school, spec, state, { directive, settings: o.settings, now: o.now, scopeMasked: masksOf(spec, masked) }),
    );
  let probe = lastKnown(state, resources);
  let tasks = planAll(probe.masked);
  if (needsProbe(tasks)) {
    probe = await probeSchool(o.client, school, resources);
    if (probe.inactive) return skipSchool(o.plan, o.reporter, school, probe.inactive);
    tasks = planAll(probe.masked);
    for (const t of tasks) if (t.spec.path === PERMISSIONS_PATH && probe.permissions) t.prefetched = probe.permissions;
  }
  if (probe.masked.length) {
    o.plan.scopeMasked[school.id] = probe.masked;
    o.reporter.emit({ event: 'scope_masked', school_id: school.id, columns: probe.masked });
  }
  o.plan.tasks.push(...tasks);
}

/**
 * The permissions are read before the school's tasks (one request, which also finds an inactive
 * school once instead of in every task) when they are exported anyway (the request is reused), or
 * when a resource with scope-guarded properties is read in full. Incremental reads use what the
 * last read found, so an incremental run costs no extra request.
 */
function needsProbe(tasks: TaskPlan[]): boolean {
  return tasks.some((t) => t.spec.path === PERMISSIONS_PATH || (t.mode === 'full' && PROPERTY_SCOPES[t.spec.name]));
}

function lastKnown(state: SchoolState, resources: ResourceSpec[]): SchoolProbe {
  return { masked: resources.flatMap((r) => state.resources[r.name]?.scope_masked ?? []).sort() };
}

/** The masked columns of this resource's own tables ("table.column"). */
function masksOf(spec: ResourceSpec, masked: string[]): string[] {
  const tables = new Set([spec.name, ...(spec.children ?? []).map((c) => c.table)]);
  return masked.filter((m) => tables.has(m.slice(0, m.indexOf('.'))));
}

function skipSchool(
  plan: RunPlan,
  reporter: Reporter,
  school: { id: string; region: string },
  err: ExportError,
  status: 'skipped' | 'failed' = 'skipped',
): void {
  reporter.emit({ event: 'school_skipped', school_id: school.id, code: err.code, reason: err.message });
  const error = { code: err.code, message: err.message };
  plan.skipped.push({ school_id: school.id, region: school.region, resource: '*', status, mode: 'full', files: [], rows: {}, error });
}
