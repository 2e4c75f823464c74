import type { RunConfig } from '../config/resolve.ts';
import { ConfigError } from '../errors.ts';
import { formatByName } from '../format/index.ts';
import { newRunId } from '../manifest/run-id.ts';
import { statePath } from '../manifest/state-store.ts';
import { tableSchemas } from '../resources/index.ts';
import { ApiClient } from '../source/client.ts';
import { readsInWindows } from './windows.ts';
import { selectResources } from '../resources/index.ts';
import { planRun } from './run-plan.ts';
import { openForReading } from './dest-reader.ts';
import { destinationGuard } from './run-privacy.ts';
import { DESTINATION_RECORD } from '../privacy/destination.ts';

/** One line of the plan: what a task would read and where it would write. */
export interface PlannedTask {
  school_id: string;
  region: string;
  resource: string;
  mode: 'full' | 'incremental';
  reason: string;
  updated_after?: string;
  resume_from_page?: number;
  windows?: number;
  writes: string[];
}

export interface DryRunPlan {
  dest: string;
  run_id: string;
  schools: number;
  tasks: PlannedTask[];
  skipped: { school_id: string; code: string; reason: string }[];
  deactivated: string[];
  notes: string[];
  /** What every run writes besides the tasks' files. */
  writes: string[];
}

/**
 * `run --dry-run`: discovery and the plan, nothing else. No data request (the permissions probe
 * and the revocation lists are not read, so scope and revocations show as the last run left them),
 * no lease, no write: a local destination that does not exist yet reads as empty.
 */
export async function planExport(cfg: RunConfig, deps: { token: string; now?: () => Date }): Promise<DryRunPlan> {
  if (cfg.source.kind !== 'api') throw new ConfigError('the sandbox source is started by the command line; pass an API source here');
  const resources = selectResources(cfg.resources, cfg.customResources);
  const now = (deps.now ?? (() => new Date()))();
  const runId = newRunId(now, cfg.shard);
  const sink = await openForReading(cfg);
  // the destination's policy and format, as the run would check them: a refusal is the run's (exit 2)
  const guard = await destinationGuard(cfg, sink, runId, now).catch(async (e: unknown) => {
    await sink.close();
    throw e;
  });
  const client = new ApiClient({
    apiUrl: cfg.source.apiUrl,
    token: deps.token,
    auth: cfg.source.auth,
    domains: cfg.source.domains,
    retry: cfg.retry,
  });
  try {
    const quiet = { emit() {}, close() {} };
    const plan = await planRun(cfg, { client, sink, reporter: quiet }, { now, probe: false });
    const ext = formatByName(cfg.format).extension(cfg.formatOptions);
    const tables = new Map(resources.map((r) => [r.name, tableSchemas(r).map((t) => t.name)]));
    return {
      dest: sink.url,
      run_id: runId,
      schools: plan.schools,
      tasks: plan.tasks.map((t) => ({
        school_id: t.school.id,
        region: t.school.region,
        resource: t.spec.name,
        mode: t.mode,
        reason: t.reason,
        ...(t.updatedAfter ? { updated_after: t.updatedAfter } : {}),
        ...(t.resume ? { resume_from_page: t.resume.pages + 1 } : {}),
        // a resumed read carries on with the walks it saved
        ...(readsInWindows(t) && !t.resume ? { windows: t.windows } : {}),
        writes: [
          ...(tables.get(t.spec.name) ?? []).map(
            (table) => `${table}/region=${t.school.region}/school_id=${t.school.id}/${runId}-NNNN.${ext}`,
          ),
          statePath(t.school.region, t.school.id),
        ],
      })),
      skipped: plan.skipped.map((s) => ({ school_id: s.school_id, code: s.error?.code ?? '', reason: s.error?.message ?? '' })),
      deactivated: plan.deactivated,
      notes: [...guard.result.notes, ...plan.notes, ...(plan.nothingToDo ? [plan.nothingToDo] : [])],
      writes: [
        `_manifests/${runId}/part-NNNNN.json`,
        `_manifests/${runId}.json`,
        `_state/_locks/run${cfg.shard.count > 1 ? `-s${cfg.shard.index}of${cfg.shard.count}` : ''}.json`,
        ...(guard.result.changed ? [DESTINATION_RECORD] : []),
      ],
    };
  } finally {
    await client.close();
    await sink.close();
  }
}

/** The plan as a person reads it. */
export function renderPlan(p: DryRunPlan): string {
  const lines = [`dry run ${p.run_id} -> ${p.dest}: ${p.schools} schools, ${p.tasks.length} tasks (nothing read, nothing written)`];
  const w = Math.max(8, ...p.tasks.map((t) => t.resource.length));
  for (const t of p.tasks) {
    const since = t.updated_after ? ` updated_after=${t.updated_after}` : '';
    const resume = t.resume_from_page ? ` from page ${t.resume_from_page}` : '';
    const windows = t.windows ? ` in ${t.windows} windows` : '';
    lines.push(`  ${t.school_id.padEnd(8)} ${t.resource.padEnd(w)} ${t.mode.padEnd(11)} ${t.reason}${since}${resume}${windows}`);
  }
  for (const s of p.skipped) lines.push(`  SKIPPED ${s.school_id}: [${s.code}] ${s.reason}`);
  if (p.deactivated.length) lines.push(`  not exported (access revoked or declined): ${p.deactivated.join(', ')}`);
  for (const n of p.notes) lines.push(`  NOTE: ${n}`);
  const example = p.tasks[0]?.writes[0];
  lines.push(
    `  writes: ${example ? `${example} (one folder per table and school), ` : ''}_state/region=<r>/school_id=<id>.json, ${p.writes.join(', ')}`,
  );
  return lines.join('\n');
}
