import { randomBytes } from 'node:crypto';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { RunSummary } from './summary.ts';

/**
 * A run's figures in the Prometheus text exposition format, for node_exporter's textfile collector
 * (`--collector.textfile.directory`): written to a temporary file in the same directory and
 * renamed, so the collector never reads half a file. Every series carries the destination and the
 * shard, so the shards of one destination can write files side by side on one host.
 *
 * The last success time outlives a failed run: it is carried over from the file the previous run
 * wrote (absent until a run succeeds with --metrics-file set).
 */
export interface MetricsContext {
  dest: string;
  shard: { index: number; count: number };
  /** When the run ended. */
  finishedAt: Date;
}

const PREFIX = 'school_export_';
const LAST_SUCCESS = `${PREFIX}last_success_timestamp_seconds`;

type Labels = Record<string, string>;
interface Family {
  name: string;
  help: string;
  samples: [Labels, number][];
}

export function renderMetrics(s: RunSummary, c: MetricsContext, lastSuccess: number | undefined): string {
  const base: Labels = { dest: s.dest, shard: `${c.shard.index}/${c.shard.count}` };
  const one = (name: string, help: string, value: number | null | undefined): Family[] =>
    value === null || value === undefined ? [] : [{ name, help, samples: [[{}, value]] }];
  const perTable = (name: string, help: string, pick: (t: RunSummary['tables'][string]) => number): Family => ({
    name,
    help,
    samples: Object.keys(s.tables)
      .sort()
      .map((table) => [{ table }, pick(s.tables[table]!)]),
  });
  const failures = new Map<string, number>();
  for (const f of s.failures) failures.set(`${f.status}\u0000${f.code}`, (failures.get(`${f.status}\u0000${f.code}`) ?? 0) + 1);
  const ended = c.finishedAt.getTime() / 1000;
  const families: Family[] = [
    ...one('run_success', 'whether the last run committed every task (1) or not (0)', s.status === 'ok' ? 1 : 0),
    {
      name: 'run_status',
      help: 'the last run status: ok, partial, failed or interrupted (1 for the one it had)',
      samples: (['ok', 'partial', 'failed', 'interrupted'] as const).map((st) => [{ status: st }, s.status === st ? 1 : 0]),
    },
    ...one('run_end_timestamp_seconds', 'when the last run ended (Unix time)', ended),
    ...one(
      'last_success_timestamp_seconds',
      'when the last run that committed every task ended (Unix time)',
      s.status === 'ok' ? ended : lastSuccess,
    ),
    ...one('run_duration_seconds', 'how long the last run took', +(s.durationMs / 1000).toFixed(3)),
    perTable('rows_written', 'table rows the last run wrote, per table (child tables included)', (t) => t.rows),
    perTable('files_written', 'files the last run wrote, per table', (t) => t.files),
    perTable('bytes_written', 'bytes the last run wrote, per table', (t) => t.bytes),
    ...one('records_read', 'API records the last run read (committed or not)', s.throughput.recordsRead),
    ...one('requests', 'HTTP requests the last run made', s.throughput.requests),
    {
      name: 'tasks',
      help: 'tasks (school x table) of the last run by how they ended',
      samples: (['committed', 'failed', 'skipped', 'interrupted', 'not_started'] as const).map((st) => [{ status: st }, s.tasks[st]]),
    },
    {
      name: 'task_failures',
      help: 'tasks of the last run that did not commit, by status and error code',
      samples: [...failures.entries()].sort().map(([k, n]) => {
        const [status, code] = k.split('\u0000') as [string, string];
        return [{ status, code }, n];
      }),
    },
    ...one('max_lag_seconds', "how far behind the source the last run's furthest table is, at its end (watermark lag)", s.maxLagSeconds),
  ];
  return families.map((f) => familyText(f, base)).join('');
}

function familyText(f: Family, base: Labels): string {
  const name = PREFIX + f.name;
  const lines = [`# HELP ${name} ${f.help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}`, `# TYPE ${name} gauge`];
  for (const [labels, value] of f.samples) lines.push(`${name}{${labelText({ ...base, ...labels })}} ${formatValue(value)}`);
  return lines.join('\n') + '\n';
}

/** Label values escape \, " and line feeds (the exposition format's three escapes). */
function labelText(labels: Labels): string {
  return Object.entries(labels)
    .map(([k, v]) => `${k}="${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`)
    .join(',');
}

const formatValue = (v: number) => (Number.isFinite(v) ? String(v) : v > 0 ? '+Inf' : v < 0 ? '-Inf' : 'NaN');

/** The last success time a previous file recorded (for the same destination and shard), if any. */
export function previousLastSuccess(text: string | undefined): number | undefined {
  if (!text) return undefined;
  const m = new RegExp(`^${LAST_SUCCESS}\\{[^}]*\\} (\\S+)$`, 'm').exec(text);
  const v = m ? Number(m[1]) : NaN;
  return Number.isFinite(v) ? v : undefined;
}

/** Writes the file atomically (temporary name in the same directory, then rename). */
export async function writeMetricsFile(path: string, s: RunSummary, c: MetricsContext): Promise<void> {
  const before = await readFile(path, 'utf8').catch(() => undefined);
  const text = renderMetrics(s, c, previousLastSuccess(before));
  // node_exporter reads *.prom only: a temporary name without that ending is never collected
  const tmp = join(dirname(path), `.${basename(path)}.${randomBytes(4).toString('hex')}.tmp`);
  try {
    await writeFile(tmp, text, { mode: 0o644 });
    await rename(tmp, path);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
}
