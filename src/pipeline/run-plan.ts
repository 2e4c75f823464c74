import { compareIds } from '../ids.ts';
import pLimit from 'p-limit';
import type { RunConfig } from '../config/resolve.ts';
import { selectResources } from '../resources/index.ts';
import { resolveToken } from '../config/credentials.ts';
import { ExportError, asExportError } from '../errors.ts';
import type { ManifestTask, SchoolDirective, SchoolState } from '../manifest/types.ts';
import type { ResourceSpec } from '../resources/types.ts';
import type { Sink } from '../sink/types.ts';
import type { ApiClient } from '../source/client.ts';
import { discoverSchools, planTask, type PlanSettings } from './plan.ts';
import type { Reporter } from './progress.ts';
import { keepResponse, PERMISSIONS_PATH, probeSchool, type SchoolProbe } from './school-probe.ts';
import { SchoolFiles } from './school-files.ts';
import { DigestedStates } from '../manifest/state-digest.ts';
import { ScopeKnowledge } from './scope-knowledge.ts';
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

/** `probe: false` (dry runs): no permissions request; scope masks as the last read recorded them. */
export async function planRun(
  cfg: RunConfig,
  io: PlanIo,
  o: {
    now: Date;
    personalData?: string;
    probe?: boolean;
    reconcile?: (approved: ReadonlySet<string>) => Promise<string[]>;
    /** states held at their current version by the runs' digests (S3): not read again */
    stateCopies?: DigestedStates;
  },
): Promise<RunPlan> {
  const resources = selectResources(cfg.resources, cfg.customResources);
  const discovered = await discoverSchools(io.client, { only: cfg.schools, shard: cfg.shard, perPage: cfg.perPage });
  // settled before schools are planned: a reconciled revocation changes a school's directive
  const notes = (await o.reconcile?.(discovered.approved)) ?? [];
  const plan: RunPlan = { schools: discovered.schools.length, tasks: [], skipped: [], deactivated: [], scopeMasked: {}, notes };
  for (const p of discovered.problems) skipSchool(plan, io.reporter, { id: p.schoolId, region: p.region }, p.error);
  const settings: PlanSettings = {
    fullRefresh: cfg.fullRefresh,
    lookbackSeconds: cfg.lookbackSeconds,
    snapshotEveryHours: cfg.snapshotEveryHoursFor,
    windows: cfg.windows,
    ...(o.personalData ? { personalData: o.personalData } : {}),
  };
  // State and directive reads and the probe are independent per school (S3 GETs, one request).
  // Scope masks are decided once every school's permissions were read: one school's list names
  // the permissions another's lacks.
  const scopes = await ScopeKnowledge.load(io.sink, resources, cfg.propertyScopes);
  // after the reconciliation, which may write directives
  const files = await SchoolFiles.read(io.sink, o.stateCopies ?? DigestedStates.none(io.sink));
  const limit = pLimit(Math.max(16, 2 * cfg.concurrency));
  const finish: ((() => void) | undefined)[] = [];
  await Promise.all(
    discovered.schools.map((school) =>
      limit(async () => {
        const done = await planSchool(school, resources, { ...io, plan, settings, now: o.now, probe: o.probe ?? true, scopes, files });
        if (done) finish.push(done);
      }),
    ),
  );
  // each school's closure (its state, its provisional tasks) goes as soon as it has run
  for (let i = 0; i < finish.length; i++) {
    const done = finish[i]!;
    finish[i] = undefined;
    done();
  }
  const undetermined = scopes.undeterminedNote();
  if (undetermined) {
    plan.notes.push(undetermined);
    io.reporter.emit({ event: 'scope_undetermined', properties: scopes.undeterminedProperties(), message: undetermined });
  }
  if (o.probe ?? true) await scopes.save(io.sink).catch(() => undefined); // a memory: the next run relearns it
  plan.tasks.sort((a, b) => compareIds(a.school.id, b.school.id));
  if (discovered.schools.length === 0) plan.nothingToDo = nothingMessage(cfg, discovered.problems.length);
  return plan;
}

function nothingMessage(cfg: RunConfig, problems: number): string {
  if (cfg.schools?.length) return `none of the schools asked for (--schools ${cfg.schools.join(',')}) can be exported here`;
  if (problems) return 'no discovered school can be exported (see the skipped schools above)';
  const shard = cfg.shard.count > 1 ? ` in shard ${cfg.shard.index}/${cfg.shard.count}` : '';
  return `no school has approved access for this token${shard}: nothing was exported`;
}

/** Reads what the school's plan needs; returns how to finish it once every school was probed (undefined: skipped). */
async function planSchool(
  discovered: SchoolRef,
  resources: ResourceSpec[],
  o: PlanIo & { plan: RunPlan; settings: PlanSettings; now: Date; probe: boolean; scopes: ScopeKnowledge; files: SchoolFiles },
): Promise<(() => void) | undefined> {
  let school = discovered;
  let state: SchoolState;
  let directive: SchoolDirective | undefined;
  try {
    [state, directive] = await Promise.all([o.files.state(school.region, school.id), o.files.directive(school.id)]);
  } catch (e) {
    skipSchool(o.plan, o.reporter, school, asExportError(e, 'E_STATE', { school: school.id }), 'failed');
    return;
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
  if (directive?.token_file) school = withSchoolToken(school, directive.token_file, o.plan);
  const planAll = (masked: string[]) =>
    resources.map((spec) =>
      planTask(school, spec, state, { directive, settings: o.settings, now: o.now, scopeMasked: masksOf(spec, masked) }),
    );
  const last = lastKnown(state, resources);
  const tasks = planAll(last.masked);
  // built by a function of its own: a closure here would share this scope, and so keep `tasks`
  // alive in the probed schools' closures too (every school's provisional plan, until all are planned)
  if (!(o.probe && needsProbe(tasks, o.scopes))) return finishLater(o, school, tasks, last.masked);
  const probe = await probeSchool(o.client, school, resources);
  if (probe.inactive) {
    skipSchool(o.plan, o.reporter, school, probe.inactive);
    return;
  }
  if (probe.permissions) o.scopes.learn(probe.permissions.body);
  const granted = ScopeKnowledge.granted(probe.permissions?.body);
  // kept only when the school_permissions task reuses it (deflated: school-probe.ts)
  const p = tasks.some((t) => t.spec.path === PERMISSIONS_PATH) ? probe.permissions : undefined;
  const prefetched = p && keepResponse(p);
  return () => {
    const masked = o.scopes.decide(granted);
    const decided = planAll(masked);
    for (const t of decided) if (t.spec.path === PERMISSIONS_PATH && prefetched) t.prefetched = prefetched;
    finishSchool(o, school, decided, masked);
  };
}

function finishLater(o: PlanIo & { plan: RunPlan; scopes: ScopeKnowledge }, school: SchoolRef, tasks: TaskPlan[], masked: string[]) {
  return (): void => finishSchool(o, school, tasks, masked);
}

/** Once every school's permissions were read: the school's tasks, what they guard, and its masked columns said. */
function finishSchool(o: PlanIo & { plan: RunPlan; scopes: ScopeKnowledge }, school: SchoolRef, tasks: TaskPlan[], masked: string[]): void {
  for (const t of tasks) {
    const guarded = o.scopes.guardedOf(t.spec);
    if (guarded.length) t.scopeGuarded = guarded;
  }
  if (masked.length) {
    o.plan.scopeMasked[school.id] = masked;
    o.reporter.emit({ event: 'scope_masked', school_id: school.id, columns: masked });
  }
  o.plan.tasks.push(...tasks);
}

/**
 * The permissions are read before the school's tasks (one request, which also finds an inactive
 * school once instead of in every task) when they are exported anyway (the request is reused), or
 * when a resource with scope-guarded properties is read in full, or was masked last time (has the
 * scope come back?), or has a guarded property whose permission is not known yet (the lists may
 * name it). Other incremental reads use what the last read found: no extra request.
 */
function needsProbe(tasks: TaskPlan[], scopes: ScopeKnowledge): boolean {
  const guardedRead = (t: TaskPlan) => t.mode === 'full' || t.scopeMasked.length > 0 || scopes.unknownIn(t.spec);
  return tasks.some((t) => t.spec.path === PERMISSIONS_PATH || (scopes.guards(t.spec) && guardedRead(t)));
}

function lastKnown(state: SchoolState, resources: ResourceSpec[]): SchoolProbe {
  return { masked: resources.flatMap((r) => state.resources[r.name]?.scope_masked ?? []).sort() };
}

/**
 * A token the school delivered with schoolApproved (kept by the receiver in a 0600 file) is used
 * for that school's requests; the client sends it only to configured domains, like the run's own.
 * A receiver on another machine keeps it where this run cannot read it: then the run's token is used.
 */
function withSchoolToken(school: SchoolRef, tokenFile: string, plan: RunPlan): SchoolRef {
  try {
    return { ...school, token: resolveToken(tokenFile) };
  } catch (e) {
    plan.notes.push(
      `school ${school.id}: its own token (${tokenFile}) cannot be read here (${asExportError(e, 'E_CONFIG').message}); the run's token was used`,
    );
    return school;
  }
}

/**
 * The masked columns of this resource's own tables ("table.column"). Nearly every plan has none:
 * they share one frozen empty list (a run holds every plan until its task starts: 3 MB at 10,000
 * schools otherwise).
 */
function masksOf(spec: ResourceSpec, masked: string[]): string[] {
  if (masked.length === 0) return NONE_MASKED;
  const tables = new Set([spec.name, ...(spec.children ?? []).map((c) => c.table)]);
  const own = masked.filter((m) => tables.has(m.slice(0, m.indexOf('.'))));
  return own.length ? own : NONE_MASKED;
}

const NONE_MASKED = Object.freeze([]) as unknown as string[];

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
