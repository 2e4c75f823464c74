import type { Argv, CommandModule } from 'yargs';
import { resolveRunConfig } from '../config/resolve.ts';
import type { PipelineConfig } from '../config/schema.ts';
import { FORMAT_NAMES, PARQUET_WRITERS, type FormatName, type ParquetWriterName } from '../format/index.ts';
import { runExport } from '../pipeline/run.ts';
import { renderSummary } from '../pipeline/summary.ts';
import { parsePersonalColumns } from '../privacy/config.ts';
import { openSource } from './run-source.ts';
import { parseDomains, withApiOptions, type ApiArgs } from './common.ts';

interface RunArgs extends ApiArgs {
  pipeline?: string;
  dest?: string;
  's3-endpoint'?: string;
  's3-region'?: string;
  's3-checksum-when-required'?: boolean;
  's3-sse'?: 'AES256' | 'aws:kms';
  's3-sse-kms-key-id'?: string;
  format?: FormatName;
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
  shard?: string;
  windows?: number;
  'checkpoint-pages'?: number;
  'checkpoint-seconds'?: number;
  'wait-for-lock'?: number;
  'purge-on-revoke'?: boolean;
  progress?: 'auto' | 'tty' | 'json' | 'none';
  json?: boolean;
  'person-id'?: 'keep' | 'pseudonymise';
  'direct-identifier'?: 'keep' | 'pseudonymise' | 'drop';
  'free-text'?: 'keep' | 'drop';
  'personal-column'?: string[];
  'pseudonymise-key-file'?: string;
}

const list = (v: string | undefined) =>
  v === undefined
    ? undefined
    : v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);

/** Flags mirror the pipeline file's keys (kebab-case here, snake_case there). */
export function flagsToPipeline(a: RunArgs): PipelineConfig {
  return {
    api_url: a['api-url'],
    token_file: a['token-file'],
    domains: a.domain?.length ? parseDomains(a.domain) : undefined,
    auth: a.auth,
    dest: a.dest,
    s3_endpoint: a['s3-endpoint'],
    s3_region: a['s3-region'],
    s3_checksum_when_required: a['s3-checksum-when-required'],
    s3_sse: a['s3-sse'],
    s3_sse_kms_key_id: a['s3-sse-kms-key-id'],
    format: a.format,
    gzip: a.gzip,
    csv_formula_guard: a['csv-formula-guard'],
    row_group_rows: a['row-group-rows'],
    parquet_writer: a['parquet-writer'],
    workers: a.workers,
    max_file_rows: a['max-file-rows'],
    max_file_bytes: a['max-file-bytes'],
    resources: list(a.resources),
    schools: list(a.schools),
    full_refresh: a['full-refresh'],
    concurrency: a.concurrency,
    connections_per_domain: a['connections-per-domain'],
    per_page: a['per-page'],
    lookback_seconds: a['lookback-seconds'],
    snapshot_every_hours: a['snapshot-every-hours'],
    shard: a.shard,
    windows: a.windows,
    checkpoint_pages: a['checkpoint-pages'],
    checkpoint_seconds: a['checkpoint-seconds'],
    wait_for_lock: a['wait-for-lock'],
    purge_on_revoke: a['purge-on-revoke'],
    progress: a.progress,
    personal_data: personalDataFlags(a),
    pseudonymise_key_file: a['pseudonymise-key-file'],
  };
}

function personalDataFlags(a: RunArgs): PipelineConfig['personal_data'] {
  const columns = parsePersonalColumns(a['personal-column']);
  const pd = { person_id: a['person-id'], direct_identifier: a['direct-identifier'], free_text: a['free-text'], columns };
  return Object.values(pd).some((v) => v !== undefined) ? pd : undefined;
}

export const runCommand: CommandModule<object, RunArgs> = {
  command: 'run [pipeline]',
  describe: 'export data: the pipeline file, or --api-url with defaults, or (with neither) the built-in sandbox to ./exports',
  builder: (y: Argv) =>
    withApiOptions(y)
      .positional('pipeline', { type: 'string', describe: 'pipeline file (JSON); see pipelines/' })
      .option('dest', { type: 'string', describe: 'DIR or s3://bucket/prefix (default ./exports)' })
      .option('s3-endpoint', { type: 'string', describe: 'S3-compatible endpoint URL (MinIO, R2, GCS interoperability); path-style' })
      .option('s3-region', { type: 'string' })
      .option('s3-checksum-when-required', {
        type: 'boolean',
        describe: 'send/validate checksums only when the operation requires them (default on with --s3-endpoint)',
      })
      .option('s3-sse', {
        choices: ['AES256', 'aws:kms'] as const,
        describe: 'server-side encryption of every object written (data, manifests, state, leases)',
      })
      .option('s3-sse-kms-key-id', { type: 'string', describe: 'with --s3-sse aws:kms: the KMS key id, ARN or alias/NAME' })
      .option('format', { choices: FORMAT_NAMES, describe: 'output format (default parquet)' })
      .option('gzip', { type: 'boolean', describe: 'gzip NDJSON files' })
      .option('csv-formula-guard', {
        type: 'boolean',
        describe: "prefix ' to CSV text starting with = + - @ (spreadsheet formula injection)",
      })
      .option('row-group-rows', { type: 'number', describe: 'Parquet rows per row group' })
      .option('parquet-writer', { choices: PARQUET_WRITERS, describe: 'Parquet encoder (default builtin)' })
      .option('workers', { type: 'number', describe: 'worker threads for page CPU work; 0 = main thread only (default: from the CPUs)' })
      .option('max-file-rows', { type: 'number', describe: 'roll over to a new file after this many rows' })
      .option('max-file-bytes', { type: 'number', describe: 'roll over to a new file after this many bytes' })
      .option('resources', { type: 'string', describe: 'comma-separated tables to export (default all)' })
      .option('schools', { type: 'string', describe: 'comma-separated school ids (default all approved)' })
      .option('full-refresh', { type: 'boolean', describe: 'ignore watermarks and export everything' })
      .option('concurrency', { type: 'number', describe: 'tasks (school × resource) in flight (default 4)' })
      .option('connections-per-domain', {
        type: 'number',
        describe: 'HTTP connections per API domain (default 2 × concurrency, at least 8)',
      })
      .option('per-page', { type: 'number', describe: 'rows per page requested (default 1000; the server may clamp)' })
      .option('lookback-seconds', { type: 'number', describe: 'overlap subtracted from watermarks (default 300)' })
      .option('snapshot-every-hours', {
        type: 'number',
        describe: 'full snapshot interval for tables without deletion records (default 168)',
      })
      .option('shard', { type: 'string', describe: 'I/N: export only the schools of shard I of N (stable hash of the school id)' })
      .option('windows', {
        type: 'number',
        describe: 'split a full read of a big school into N updated_at windows read side by side (default 1)',
      })
      .option('checkpoint-pages', { type: 'number', describe: 'a long read commits what it has every N pages (default 50; 0: never)' })
      .option('checkpoint-seconds', { type: 'number', describe: '... or every N seconds, whichever comes first (default 60; 0: never)' })
      .option('wait-for-lock', {
        type: 'number',
        describe: 'wait up to N seconds for another run holding this destination (and shard) to finish (default: fail at once)',
      })
      .option('purge-on-revoke', {
        type: 'boolean',
        describe: 'delete the data of schools the service lists as revoked or declined (as webhooks serve --purge-on-revoke)',
      })
      .option('progress', {
        choices: ['auto', 'tty', 'json', 'none'] as const,
        describe: 'live display on a TTY, JSON lines otherwise (default auto)',
      })
      .option('json', { type: 'boolean', describe: 'print the summary as JSON' })
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
        describe: 'file holding the secret pseudonymisation key (else SCHOOL_EXPORT_PSEUDONYMISE_KEY_FILE)',
      }) as unknown as Argv<RunArgs>,
  handler: async (a) => {
    const cfg = resolveRunConfig(a.pipeline, flagsToPipeline(a));
    const interrupt = onInterrupt();
    const source = await openSource(cfg);
    try {
      const summary = await runExport(source.cfg, { token: source.token, signal: interrupt.signal });
      if (a.json || !process.stdout.isTTY) process.stdout.write(JSON.stringify(summary) + '\n');
      if (!a.json) process.stderr.write(renderSummary(summary) + '\n');
      process.exitCode = summary.status === 'ok' ? 0 : summary.status === 'interrupted' ? interrupt.exitCode() : 1;
    } finally {
      interrupt.dispose();
      await source.close();
    }
  },
};

const SIGNAL_EXIT = { SIGINT: 130, SIGTERM: 143 } as const;

/**
 * The first SIGINT/SIGTERM asks the run to stop (tasks stop at their next page, nothing
 * half-written is committed, the manifest says `interrupted`); a second one exits at once.
 */
function onInterrupt(): { signal: AbortSignal; exitCode(): number; dispose(): void } {
  const ac = new AbortController();
  let received: keyof typeof SIGNAL_EXIT | undefined;
  const handler = (sig: keyof typeof SIGNAL_EXIT) => {
    if (received) process.exit(SIGNAL_EXIT[sig]);
    received = sig;
    process.stderr.write(`school-export: ${sig} received: stopping (finishing the manifest); send it again to exit at once\n`);
    ac.abort(new Error(`interrupted by ${sig}`));
  };
  for (const sig of Object.keys(SIGNAL_EXIT) as (keyof typeof SIGNAL_EXIT)[]) process.on(sig, handler);
  return {
    signal: ac.signal,
    exitCode: () => SIGNAL_EXIT[received ?? 'SIGINT'],
    dispose: () => {
      for (const sig of Object.keys(SIGNAL_EXIT)) process.off(sig, handler);
    },
  };
}
