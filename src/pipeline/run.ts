import pLimit from 'p-limit';
import { ApiClient } from '../source/client.ts';
import { openSink } from '../sink/index.ts';
import type { Sink } from '../sink/types.ts';
import { formatByName } from '../format/index.ts';
import { Committer } from '../manifest/committer.ts';
import { newRunId } from '../manifest/run-id.ts';
import { readDirective, readState, updateState } from '../manifest/state-store.ts';
import type { Manifest, ManifestTask, SchoolDirective, SchoolState } from '../manifest/types.ts';
import type { RunConfig } from '../config/resolve.ts';
import { resolveToken } from '../config/credentials.ts';
import { ExportError, oneLine } from '../errors.ts';
import { discoverSchools, selectResources } from './plan.ts';
import { runTask, type SchoolRef, type TaskPlan } from './task.ts';
import { nextWatermark, snapshotDue } from './watermark.ts';
import { createReporter, type Reporter } from './progress.ts';
import { summarise, type RunSummary } from './summary.ts';
import { createPersonalData, type PersonalData } from '../privacy/personal-data.ts';

export interface RunDeps {
  /** Token for kind 'api' (else resolved from --token-file / SCHOOL_API_TOKEN). */
  token?: string;
  reporter?: Reporter;
  signal?: AbortSignal;
  now?: () => Date;
}

/**
 * One run: discover schools, plan school × resource tasks, run them with bounded concurrency,
 * commit each task's state after its files are durable and listed, write the run manifest last.
 * A failing task never stops the others and never advances its state.
 */
export async function runExport(cfg: RunConfig, deps: RunDeps = {}): Promise<RunSummary> {
  const started = Date.now();
  const reporter = deps.reporter ?? createReporter(cfg.progress);
  const resources = selectResources(cfg.resources, cfg.customResources);
  const format = formatByName(cfg.format);
  const personalData = createPersonalData(cfg.personalData.policy, cfg.personalData.key);
  let sandbox: { close(): Promise<void> } | undefined;
  let client: ApiClient | undefined;
  let sink: Sink | undefined;
  try {
    let apiUrl: string, domains: Record<string, string>, token: string, auth: 'bearer' | 'basic';
    if (cfg.source.kind === 'sandbox') {
      const { startSandbox } = await import('../sandbox/index.ts');
      const sb = await startSandbox({
        seed: cfg.source.seed,
        schools: cfg.source.schools,
        achievementsPerSchool: cfg.source.achievementsPerSchool,
        maxPerPage: cfg.source.maxPerPage,
      });
      sandbox = sb;
      ({ url: apiUrl, domains } = sb);
      token = sb.tokens.full;
      auth = 'bearer';
    } else {
      ({ apiUrl, domains, auth } = cfg.source);
      token = deps.token ?? resolveToken(cfg.source.tokenFile);
    }
    sink = await openSink(cfg.dest, {
      s3: { endpoint: cfg.s3.endpoint, region: cfg.s3.region, checksumWhenRequired: cfg.s3.checksumWhenRequired },
    });
    client = new ApiClient({
      apiUrl,
      token,
      auth,
      domains,
      connectionsPerDomain: cfg.connectionsPerDomain,
      onEvent: (e) => {
        if (e.type === 'retry') reporter.emit({ event: 'retry', url: e.url, attempt: e.attempt, delay_ms: e.delayMs, reason: e.reason });
      },
    });
    return await execute(cfg, client, sink, resources, format, personalData, reporter, deps, started);
  } finally {
    reporter.close();
    await client?.close();
    await sink?.close();
    await sandbox?.close();
  }
}

async function execute(
  cfg: RunConfig,
  client: ApiClient,
  sink: Sink,
  resources: ReturnType<typeof selectResources>,
  format: ReturnType<typeof formatByName>,
  personalData: PersonalData,
  reporter: Reporter,
  deps: RunDeps,
  started: number,
): Promise<RunSummary> {
  const now = deps.now ?? (() => new Date());
  const startedAt = now();
  const runId = newRunId(startedAt, cfg.shard);
  const extractedAt = startedAt.toISOString().replace('Z', '000Z');
  const committer = new Committer(sink, {
    version: 1,
    run_id: runId,
    started_at: startedAt.toISOString(),
    format: cfg.format,
    format_options: { ...cfg.formatOptions },
    ...(cfg.shard.count > 1 ? { shard: cfg.shard } : {}),
    personal_data: personalData.record,
  });

  const discovered = await discoverSchools(client, { only: cfg.schools, shard: cfg.shard, perPage: cfg.perPage });
  const skipped: ManifestTask[] = [];
  for (const p of discovered.problems) {
    reporter.emit({ event: 'school_skipped', school_id: p.schoolId, reason: p.error.message });
    skipped.push(failedTask(p.schoolId, p.region, '*', 'skipped', p.error));
  }

  // Per school: state, directive, and which resources run full or incremental.
  const plans: TaskPlan[] = [];
  const forceSeq = new Map<string, number>();
  const deactivated: string[] = [];
  // State and directive reads are independent per school (S3 GETs): read them concurrently. An
  // unreadable state fails that school's tasks, not the run.
  const readLimit = pLimit(16);
  const perSchool = await Promise.all(
    discovered.schools.map((school) =>
      readLimit(async () => {
        try {
          const [state, directive] = await Promise.all([readState(sink, school.region, school.id), readDirective(sink, school.id)]);
          return { ok: true as const, school, state, directive };
        } catch (e) {
          return { ok: false as const, school, error: e instanceof ExportError ? e : new ExportError('E_STATE', oneLine(e)) };
        }
      }),
    ),
  );
  for (const r of perSchool) {
    const { school } = r;
    if (!r.ok) {
      reporter.emit({ event: 'school_skipped', school_id: school.id, reason: r.error.message });
      skipped.push(failedTask(school.id, school.region, '*', 'failed', r.error));
      continue;
    }
    const { state, directive } = r;
    if (directive?.deactivated) {
      deactivated.push(school.id);
      reporter.emit({
        event: 'school_skipped',
        school_id: school.id,
        reason: `access ${directive.deactivated.event}: ${directive.deactivated.reason}`,
      });
      continue;
    }
    if (directive) forceSeq.set(school.id, directive.force_full_seq);
    for (const spec of resources) plans.push(planTask(school, spec, state, directive, cfg, startedAt, personalData.fingerprint));
  }
  reporter.emit({
    event: 'run_start',
    run_id: runId,
    dest: sink.url,
    format: cfg.format,
    schools: discovered.schools.length,
    tasks: plans.length,
  });

  const seqs = new Map<string, number>();
  const nextSeq = (dir: string) => {
    const n = (seqs.get(dir) ?? 0) + 1;
    seqs.set(dir, n);
    return n;
  };
  const limit = pLimit(cfg.concurrency);
  await Promise.all(
    plans.map((plan) =>
      limit(async (): Promise<ManifestTask> => {
        const { school, spec } = plan;
        const t0 = Date.now();
        reporter.emit({ event: 'task_start', school_id: school.id, resource: spec.name, mode: plan.mode });
        try {
          deps.signal?.throwIfAborted();
          const out = await runTask(plan, {
            client,
            sink,
            format,
            formatOptions: cfg.formatOptions,
            runId,
            extractedAt,
            perPage: cfg.perPage,
            lookbackSeconds: cfg.lookbackSeconds,
            limits: { maxRows: cfg.maxFileRows, maxBytes: cfg.maxFileBytes },
            nextSeq,
            personalData,
            signal: deps.signal,
            onProgress: (p) => reporter.emit({ event: 'task_progress', school_id: school.id, resource: spec.name, ...p }),
          });
          const watermark = nextWatermark(plan.previousWatermark, out.taskStart);
          out.task.watermark = watermark;
          await committer.commit({
            task: out.task,
            deletions: out.deletions,
            promote: async () => {
              let oldIds: string | undefined;
              await updateState(sink, school.region, school.id, (s) => {
                const prev = s.resources[spec.name];
                oldIds = prev?.known_ids_file;
                s.resources[spec.name] = {
                  watermark,
                  last_run_id: runId,
                  last_full_at: out.task.mode === 'full' ? out.taskStart.toISOString() : (prev?.last_full_at ?? null),
                  ...(out.snapshotIdsFile
                    ? { known_ids_file: out.snapshotIdsFile }
                    : prev?.known_ids_file
                      ? { known_ids_file: prev.known_ids_file }
                      : {}),
                  ...(personalData.fingerprint !== 'keep' ? { personal_data: personalData.fingerprint } : {}),
                  ...(forceSeq.has(school.id)
                    ? { applied_force_full_seq: forceSeq.get(school.id) }
                    : prev?.applied_force_full_seq !== undefined
                      ? { applied_force_full_seq: prev.applied_force_full_seq }
                      : {}),
                };
              });
              // The previous id list is no longer referenced: keep state from growing.
              if (oldIds && out.snapshotIdsFile && oldIds !== out.snapshotIdsFile) await sink.remove([oldIds]).catch(() => undefined);
            },
          });
          const files = out.task.files.length;
          const rows = Object.values(out.task.rows).reduce((a, b) => a + b, 0);
          reporter.emit({ event: 'task_done', school_id: school.id, resource: spec.name, rows, files, ms: Date.now() - t0 });
          return out.task;
        } catch (e) {
          const err = e instanceof ExportError ? e : new ExportError('E_SINK', oneLine(e), { cause: e });
          reporter.emit({ event: 'task_failed', school_id: school.id, resource: spec.name, code: err.code, message: err.message });
          const task = failedTask(school.id, school.region, spec.name, 'failed', err);
          // A task whose files were listed but whose state did not advance is in the manifest already.
          if (!(e as { listed?: boolean }).listed) committer.record(task);
          return task;
        }
      }),
    ),
  );
  for (const t of skipped) committer.record(t);
  const manifest: Manifest = await committer.finish();
  const summary = summarise(manifest, { deactivated, durationMs: Date.now() - started, dest: sink.url });
  reporter.emit({ event: 'run_done', run_id: runId, status: summary.failures.length ? 'partial' : 'ok', ms: summary.durationMs });
  return summary;
}

function planTask(
  school: SchoolRef,
  spec: TaskPlan['spec'],
  state: SchoolState,
  directive: SchoolDirective | undefined,
  cfg: RunConfig,
  now: Date,
  personalData: string,
): TaskPlan {
  const prev = state.resources[spec.name];
  // A different personal-data policy or key: rows read before were transformed otherwise, so the
  // resource is read again in full, as after a migration (a loader then replaces the old rows).
  const policyChanged = prev !== undefined && (prev.personal_data ?? 'keep') !== personalData;
  const forced = (directive ? directive.force_full_seq > (prev?.applied_force_full_seq ?? 0) : false) || policyChanged;
  const snapshot = !spec.deletionType && spec.name !== 'deletions' && snapshotDue(prev?.last_full_at, cfg.snapshotEveryHours, now);
  const full = cfg.fullRefresh || forced || !prev?.watermark || !spec.incremental || snapshot;
  return {
    school,
    spec,
    mode: full ? 'full' : 'incremental',
    // A forced full refresh (migration: ids changed) also restarts the deletions feed.
    previousWatermark: forced || cfg.fullRefresh ? null : (prev?.watermark ?? null),
    knownIdsFile: forced ? undefined : prev?.known_ids_file,
  };
}

function failedTask(schoolId: string, region: string, resource: string, status: 'failed' | 'skipped', err: ExportError): ManifestTask {
  return {
    school_id: schoolId,
    region,
    resource,
    status,
    mode: 'full',
    files: [],
    rows: {},
    error: { code: err.code, message: err.message },
  };
}
