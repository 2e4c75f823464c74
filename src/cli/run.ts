import type { Argv, CommandModule } from 'yargs';
import { DEFAULTS, resolveRunConfig } from '../config/resolve.ts';
import type { LogLevel, PipelineConfig, PipelineKey, ProgressMode } from '../config/schema.ts';
import { DEFAULT_ROW_GROUP_ROWS, FORMAT_NAMES, PARQUET_WRITERS, formatByName, type ParquetWriterName } from '../format/index.ts';
import { runExport } from '../pipeline/run.ts';
import { renderSummary, type RunSummary } from '../pipeline/summary.ts';
import { ConfigError } from '../errors.ts';
import { parsePersonalColumns } from '../privacy/config.ts';
import { parsePropertyScopePairs } from '../resources/scopes.ts';
import { LOG_LEVELS } from './log.ts';
import { boundForLargeReads } from './heap.ts';
import { parseDomains } from '../config/credentials.ts';
import { onInterrupt } from './interrupt.ts';
import { openSource } from './run-source.ts';
import {
  commaList,
  integerOption,
  PRECEDENCE,
  s3WriteSettings,
  settingHelp,
  withApiOptions,
  withS3WriteOptions,
  type ApiArgs,
  type S3WriteArgs,
} from './common.ts';

interface RunArgs extends ApiArgs, S3WriteArgs {
  pipeline?: string;
  'dry-run'?: boolean;
  dest?: string;
  format?: PipelineConfig['format'];
  gzip?: boolean;
  'csv-formula-guard'?: boolean;
  'row-group-rows'?: number;
  'parquet-writer'?: ParquetWriterName;
  workers?: number;
  'max-file-rows'?: number;
  'max-file-bytes'?: number;
  resources?: string;
  schools?: string;
  'full-refresh'?: boolean;
  concurrency?: number;
  'connections-per-domain'?: number;
  'per-page'?: number;
  'lookback-seconds'?: number;
  'snapshot-every-hours'?: number;
  'max-retries'?: number;
  'max-retry-seconds'?: number;
  'checkpoint-pages'?: number;
  'checkpoint-seconds'?: number;
  'wait-for-lock'?: number;
  lock?: 'lease' | 'none';
  'property-scopes'?: string[];
  'purge-on-revoke'?: boolean;
  shard?: string;
  windows?: number;
  progress?: ProgressMode;
  'log-level'?: LogLevel;
  'metrics-file'?: string;
  json?: boolean;
  'person-id'?: 'keep' | 'pseudonymise';
  'direct-identifier'?: 'keep' | 'pseudonymise' | 'drop';
  'free-text'?: 'keep' | 'drop';
  'personal-column'?: string[];
  'pseudonymise-key-file'?: string;
  'personal-data-change'?: boolean;
  'format-change'?: boolean;
}

/** Flags mirror the pipeline file's keys (kebab-case here, snake_case there). */
export function flagsToPipeline(a: RunArgs): PipelineConfig {
  return {
    api_url: a['api-url'],
    token_file: a['token-file'],
    domains: a.domain?.length ? parseDomains(a.domain) : undefined,
    auth: a.auth,
    dest: a.dest,
    ...s3WriteSettings(a),
    format: a.format,
    gzip: a.gzip,
    csv_formula_guard: a['csv-formula-guard'],
    row_group_rows: a['row-group-rows'],
    parquet_writer: a['parquet-writer'],
    workers: a.workers,
    max_file_rows: a['max-file-rows'],
    max_file_bytes: a['max-file-bytes'],
    resources: commaList(a.resources),
    schools: commaList(a.schools),
    full_refresh: a['full-refresh'],
    concurrency: a.concurrency,
    connections_per_domain: a['connections-per-domain'],
    per_page: a['per-page'],
    lookback_seconds: a['lookback-seconds'],
    snapshot_every_hours: a['snapshot-every-hours'],
    max_retries: a['max-retries'],
    max_retry_seconds: a['max-retry-seconds'],
    checkpoint_pages: a['checkpoint-pages'],
    checkpoint_seconds: a['checkpoint-seconds'],
    wait_for_lock: a['wait-for-lock'],
    lock: a.lock,
    property_scopes: a['property-scopes']?.length ? parsePropertyScopePairs(a['property-scopes'], '--property-scopes') : undefined,
    purge_on_revoke: a['purge-on-revoke'],
    shard: a.shard,
    windows: a.windows,
    progress: a.progress,
    personal_data: personalDataFlags(a),
    pseudonymise_key_file: a['pseudonymise-key-file'],
    log_level: a['log-level'],
    metrics_file: a['metrics-file'],
  };
}

/** Flag values as typed (before splitting lists), so an error shows what the user wrote. */
export function typedFlags(a: RunArgs): Partial<Record<PipelineKey, unknown>> {
  return { schools: a.schools, resources: a.resources, domains: a.domain, property_scopes: a['property-scopes']?.join(',') };
}

const h = settingHelp;

function personalDataFlags(a: RunArgs): PipelineConfig['personal_data'] {
  const columns = parsePersonalColumns(a['personal-column']);
  const pd = { person_id: a['person-id'], direct_identifier: a['direct-identifier'], free_text: a['free-text'], columns };
  return Object.values(pd).some((v) => v !== undefined) ? pd : undefined;
}

/** Changes only the person running the command accepts: flags, never pipeline-file or environment settings. */
function acceptFlags(a: RunArgs): { personalDataChange: boolean; formatChange: boolean } {
  return { personalDataChange: a['personal-data-change'] === true, formatChange: a['format-change'] === true };
}

export const runCommand: CommandModule<object, RunArgs> = {
  command: 'run [pipeline]',
  describe: 'export data: the pipeline file, or --api-url with defaults, or (with neither) the built-in sandbox to ./exports',
  builder: (y: Argv) =>
    withS3WriteOptions(withApiOptions(y))
      .positional('pipeline', { type: 'string', describe: 'pipeline file (JSON or YAML); see pipelines/ and schema/pipeline.schema.json' })
      .option('dest', { type: 'string', describe: h('dest', 'DIR or s3://bucket/prefix', DEFAULTS.dest) })
      .option('format', { choices: FORMAT_NAMES, describe: h('format', 'output format', DEFAULTS.format) })
      .option('gzip', { type: 'boolean', describe: h('gzip', 'gzip NDJSON files', 'off') })
      .option('csv-formula-guard', {
        type: 'boolean',
        describe: h('csv_formula_guard', "prefix ' to CSV text starting with = + - @ (spreadsheet formula injection)", 'off'),
      })
      .option('row-group-rows', integerOption(h('row_group_rows', 'Parquet rows per row group', DEFAULT_ROW_GROUP_ROWS)))
      .option('parquet-writer', { choices: PARQUET_WRITERS, describe: h('parquet_writer', 'Parquet encoder', 'builtin') })
      .option(
        'workers',
        integerOption(
          h(
            'workers',
            "the most worker threads for each page's gunzip, parse and encoding, started once the main thread is busy; 0 = main thread only",
            'CPUs - 1, at least 1; NDJSON and CSV: 0 unless that is 2 or more',
          ),
        ),
      )
      .option('max-file-rows', integerOption(h('max_file_rows', 'roll over to a new file after this many rows', DEFAULTS.maxFileRows)))
      .option('max-file-bytes', integerOption(h('max_file_bytes', 'roll over to a new file after this many bytes', DEFAULTS.maxFileBytes)))
      .option('resources', { type: 'string', requiresArg: true, describe: h('resources', 'comma-separated tables to export', 'all') })
      .option('schools', { type: 'string', requiresArg: true, describe: h('schools', 'comma-separated school ids', 'all approved') })
      .option('full-refresh', { type: 'boolean', describe: h('full_refresh', 'ignore watermarks and export everything', 'off') })
      .option('concurrency', integerOption(h('concurrency', 'tasks (school × resource) reading at once', DEFAULTS.concurrency)))
      .option(
        'connections-per-domain',
        integerOption(h('connections_per_domain', 'HTTP connections per API domain', '2 × concurrency, at least 8')),
      )
      .option('per-page', integerOption(h('per_page', 'rows per page requested (the server may clamp)', DEFAULTS.perPage)))
      .option('lookback-seconds', integerOption(h('lookback_seconds', 'overlap subtracted from watermarks', DEFAULTS.lookbackSeconds)))
      .option(
        'snapshot-every-hours',
        integerOption(
          h(
            'snapshot_every_hours',
            'hours between full snapshots of tables without deletion records (0 = never: deletions there are then never detected); per table: resource_options in the pipeline file',
            DEFAULTS.snapshotEveryHours,
          ),
        ),
      )
      .option(
        'max-retries',
        integerOption(h('max_retries', 'retries of a failed request (429, 5xx, 423, network errors)', DEFAULTS.maxRetries)),
      )
      .option(
        'max-retry-seconds',
        integerOption(h('max_retry_seconds', 'time one request may spend retrying, waits included', DEFAULTS.maxRetrySeconds)),
      )
      .option(
        'checkpoint-pages',
        integerOption(
          h('checkpoint_pages', 'a long full read commits a checkpoint every this many pages (0 = never)', DEFAULTS.checkpointPages),
        ),
      )
      .option(
        'checkpoint-seconds',
        integerOption(
          h('checkpoint_seconds', '... or every this many seconds, whichever comes first (0 = never)', DEFAULTS.checkpointSeconds),
        ),
      )
      .option(
        'wait-for-lock',
        integerOption(h('wait_for_lock', 'seconds to wait for another run holding this destination (or shard); else exit 2 at once', 0)),
      )
      .option('lock', {
        choices: ['lease', 'none'] as const,
        describe: h(
          'lock',
          'lease: one run per destination by a conditionally written lease (refused on a store that ignores If-None-Match); none: the scheduler guarantees it (docs/s3.md)',
          'lease',
        ),
      })
      .option('property-scopes', {
        type: 'string',
        array: true,
        requiresArg: true,
        describe: h(
          'property_scopes',
          'TABLE.COLUMN=PERMISSION, repeatable or comma-separated: the permission the service names for a property (e.g. achievements.comment=achievement_comment.read)',
          'none',
        ),
      })
      .option('purge-on-revoke', {
        type: 'boolean',
        describe: h('purge_on_revoke', 'purge the exported data of schools the service lists as revoked or declined', 'off'),
      })
      .option(
        'windows',
        integerOption(h('windows', 'split a full read of a big school into N updated_at windows read side by side (1 = off)', 1)),
      )
      .option('shard', {
        type: 'string',
        requiresArg: true,
        describe: h('shard', 'I/N: export only the schools of shard I of N (stable hash of the school id)', '0/1'),
      })
      .option('progress', {
        choices: ['auto', 'tty', 'json', 'none'] as const,
        describe: h('progress', 'live display on a TTY, JSON lines otherwise', DEFAULTS.progress),
      })
      .option('log-level', { choices: LOG_LEVELS, describe: h('log_level', 'least severe JSON log line written', DEFAULTS.logLevel) })
      .option('metrics-file', {
        type: 'string',
        requiresArg: true,
        describe: h(
          'metrics_file',
          "write the run's figures to PATH in the Prometheus text format (node_exporter textfile collector)",
          'none',
        ),
      })
      .option('json', { type: 'boolean', describe: 'print the summary as JSON on stdout (the default when stdout is not a terminal)' })
      .option('dry-run', {
        type: 'boolean',
        describe:
          'discover schools and print the plan (each task, its mode and updated_after, skipped schools, paths): no data request, no write',
      })
      .option('person-id', {
        choices: ['keep', 'pseudonymise'] as const,
        describe: 'ids of students, contacts, employees (docs/personal-data.md; default keep)',
      })
      .option('direct-identifier', {
        choices: ['keep', 'pseudonymise', 'drop'] as const,
        describe: 'names, UPN, email, phone, date of birth, address (default keep)',
      })
      .option('free-text', { choices: ['keep', 'drop'] as const, describe: 'comments and notes (default keep)' })
      .option('personal-column', {
        type: 'string',
        array: true,
        describe: 'TABLE.COLUMN=keep|pseudonymise|drop, repeatable: overrides the column class',
      })
      .option('pseudonymise-key-file', {
        type: 'string',
        describe: h('pseudonymise_key_file', 'file holding the secret pseudonymisation key (at least 32 bytes)', 'none'),
      })
      .option('personal-data-change', {
        type: 'boolean',
        describe:
          "accept a personal-data policy weaker than the destination's, or another key (recorded in the manifest with who: SCHOOL_EXPORT_CHANGED_BY, else user@host); a flag only, never a setting",
      })
      .option('format-change', {
        type: 'boolean',
        describe: "accept writing another format than the destination's files (a flag only, never a setting)",
      })
      .epilogue(PRECEDENCE) as unknown as Argv<RunArgs>,
  handler: async (a) => {
    const cfg = { ...resolveRunConfig(a.pipeline, flagsToPipeline(a), process.env, typedFlags(a)), ...acceptFlags(a) };
    if (a['dry-run']) return dryRun(cfg, a.json === true);
    if (cfg.metricsFile) await checkMetricsPath(cfg.metricsFile);
    const interrupt = onInterrupt();
    const source = await openSource(cfg);
    try {
      // a night of small tasks keeps the process's young generation and heap growth: fewer
      // collections (its CPU a school -8% at 2,000 schools, docs/performance-log.md); large pages
      // take the format's young generation and a tighter heap growth
      const onLargePage = () => boundForLargeReads(formatByName(cfg.format));
      const summary = await runExport(source.cfg, { token: source.token, signal: interrupt.signal, onLargePage }).catch((e: unknown) => {
        // Stopped before the run began (waiting for the lease, discovering): still 130 / 143.
        if (interrupt.signal.aborted) process.exitCode = interrupt.exitCode();
        throw e;
      });
      if (a.json || !process.stdout.isTTY) process.stdout.write(JSON.stringify(summary) + '\n');
      if (!a.json) process.stderr.write(renderSummary(summary) + '\n');
      process.exitCode = summary.status === 'ok' ? 0 : summary.status === 'interrupted' ? interrupt.exitCode() : 1;
      if (cfg.metricsFile) await writeMetrics(cfg, summary);
    } finally {
      interrupt.dispose();
      await source.close();
    }
  },
};

/** The metrics file's folder must exist and be writable: known before any request, so exit 2 then. */
async function checkMetricsPath(path: string): Promise<void> {
  const { access, constants, stat } = await import('node:fs/promises');
  const { dirname } = await import('node:path');
  const dir = dirname(path);
  const why = await access(dir, constants.W_OK).then(
    async () => ((await stat(path).catch(() => undefined))?.isDirectory() ? 'it is a directory' : undefined),
    (e: NodeJS.ErrnoException) =>
      e.code === 'ENOENT' ? `its folder ${dir} does not exist` : `its folder ${dir} is not writable (${e.code})`,
  );
  if (why) throw new ConfigError(`--metrics-file ${path}: ${why}`, 'E_USAGE');
}

/** After the run: the figures for alerting. A file that cannot be written is said, and the run exits 1. */
async function writeMetrics(cfg: ReturnType<typeof resolveRunConfig>, summary: RunSummary): Promise<void> {
  const { writeMetricsFile } = await import('../pipeline/metrics.ts');
  try {
    await writeMetricsFile(cfg.metricsFile!, summary, { dest: summary.dest, shard: cfg.shard, finishedAt: new Date() });
  } catch (e) {
    process.stderr.write(`school-export: --metrics-file ${cfg.metricsFile}: not written (${(e as Error).message})\n`);
    if (!process.exitCode) process.exitCode = 1;
  }
}

/** `run --dry-run`: the plan, as a table on a terminal and one JSON object per task otherwise. */
async function dryRun(cfg: ReturnType<typeof resolveRunConfig>, json: boolean): Promise<void> {
  const { planExport, renderPlan } = await import('../pipeline/dry-run.ts');
  const source = await openSource(cfg);
  try {
    const plan = await planExport(source.cfg, { token: source.token });
    if (json || !process.stdout.isTTY) {
      const { tasks, skipped, ...head } = plan;
      const lines = [
        { type: 'plan', ...head },
        ...tasks.map((t) => ({ type: 'task', ...t })),
        ...skipped.map((s) => ({ type: 'skipped', ...s })),
      ];
      process.stdout.write(lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
    } else {
      process.stdout.write(renderPlan(plan) + '\n');
    }
  } finally {
    await source.close();
  }
}
