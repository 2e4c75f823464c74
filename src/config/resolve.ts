import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '../errors.ts';
import { normaliseBaseUrl, parseDomains } from './credentials.ts';
import type { FormatName, ParquetWriterName } from '../format/index.ts';
import { validatePipeline, type CustomResourceConfig, type PipelineConfig } from './schema.ts';
import { mergePersonalData, resolvePersonalData, type PersonalDataSettings } from '../privacy/config.ts';
import { tableSchemas } from '../resources/index.ts';
import { selectResources } from '../pipeline/plan.ts';

/** The package's own pipelines/ folder, whatever the working directory. */
export const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const DEFAULT_PIPELINE = resolve(PACKAGE_ROOT, 'pipelines/sandbox.json');

export interface RunConfig {
  source:
    | { kind: 'api'; apiUrl: string; domains: Record<string, string>; auth: 'bearer' | 'basic'; tokenFile?: string }
    | { kind: 'sandbox'; seed: number; schools: number; achievementsPerSchool: number; maxPerPage?: number };
  pipelineFile?: string;
  dest: string;
  s3: { endpoint?: string; region?: string; checksumWhenRequired?: boolean; sse?: { type: 'AES256' | 'aws:kms'; kmsKeyId?: string } };
  format: FormatName;
  formatOptions: { gzip: boolean; csvFormulaGuard: boolean; rowGroupRows?: number; parquetWriter?: ParquetWriterName };
  /** Worker threads for the CPU work of pages (undefined: sized from the machine; 0: all on the main thread). */
  workers?: number;
  maxFileRows: number;
  maxFileBytes: number;
  schools?: string[];
  resources?: string[];
  customResources: CustomResourceConfig[];
  fullRefresh: boolean;
  concurrency: number;
  connectionsPerDomain: number;
  perPage: number;
  lookbackSeconds: number;
  snapshotEveryHours: number;
  /** Per resource (pipeline file `resource_options`), else snapshotEveryHours. */
  snapshotEveryHoursFor: (resource: string) => number;
  /** A long read commits a checkpoint every this many pages (0: never) ... */
  checkpointPages: number;
  /** ... or every this many seconds (0: never), whichever comes first. */
  checkpointSeconds: number;
  /** Wait this long for another run's lease on the destination before giving up (0: do not wait). */
  waitForLockSeconds: number;
  /** A full paginated read is split into this many updated_at windows read side by side (1: off). */
  windows: number;
  /** Purge the data of schools listed as revoked or declined (as the webhook receiver's --purge-on-revoke). */
  purgeOnRevoke: boolean;
  shard: { index: number; count: number };
  progress: 'auto' | 'tty' | 'json' | 'none';
  /** The least severe JSON log line written (debug shows every page). */
  logLevel: 'debug' | 'info' | 'warn' | 'error';
  /** Retry budget of each request (see source/retry.ts for the defaults). */
  retry: { maxAttempts?: number; maxElapsedMs?: number };
  /** The personal-data policy and, when it pseudonymises, the key (read once, here). */
  personalData: PersonalDataSettings;
}

export const DEFAULTS = {
  dest: './exports',
  format: 'parquet' as const,
  maxFileRows: 1_000_000,
  maxFileBytes: 256 * 1024 * 1024,
  concurrency: 4,
  connectionsPerDomain: 8,
  perPage: 1000,
  lookbackSeconds: 300,
  snapshotEveryHours: 168,
  checkpointPages: 50,
  checkpointSeconds: 60,
};

export function readPipelineFile(path: string): PipelineConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new ConfigError(`pipeline file ${path}: cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new ConfigError(`pipeline file ${path}: not valid JSON (${(e as Error).message})`);
  }
  return validatePipeline(raw, `pipeline file ${path}`);
}

/**
 * File settings overlaid by flag settings (flags win), then defaults. With neither a file nor
 * --api-url, the package's sandbox pipeline runs.
 */
export function resolveRunConfig(file: string | undefined, flags: PipelineConfig): RunConfig {
  validatePipeline(stripUndefined(flags), 'flags');
  const pipelineFile = file ?? (flags.api_url ? undefined : DEFAULT_PIPELINE);
  const fromFile = pipelineFile ? readPipelineFile(pipelineFile) : {};
  const c: PipelineConfig = { ...fromFile, ...stripUndefined(flags) };
  if (flags.domains) c.domains = { ...(fromFile.domains ?? {}), ...flags.domains };
  c.personal_data = mergePersonalData(fromFile.personal_data, flags.personal_data);

  let source: RunConfig['source'];
  if (c.api_url) {
    const domains: Record<string, string> = {};
    for (const [k, v] of Object.entries(c.domains ?? {})) domains[k.toLowerCase()] = normaliseBaseUrl(v, `domains.${k}`);
    source = { kind: 'api', apiUrl: normaliseBaseUrl(c.api_url, 'api_url'), domains, auth: c.auth ?? 'bearer', tokenFile: c.token_file };
  } else if (c.sandbox) {
    source = {
      kind: 'sandbox',
      seed: c.sandbox.seed ?? 1,
      schools: c.sandbox.schools ?? 6,
      achievementsPerSchool: c.sandbox.achievements_per_school ?? 500,
      maxPerPage: c.sandbox.max_per_page,
    };
  } else {
    throw new ConfigError(
      `${pipelineFile ?? 'flags'}: no source: set api_url (or --api-url), or a "sandbox" block to run against the built-in sandbox`,
    );
  }
  const [index, count] = (c.shard ?? '0/1').split('/').map(Number) as [number, number];
  const customResources = c.custom_resources ?? [];
  const tables = selectResources(undefined, customResources).flatMap((r) => tableSchemas(r));
  const personalData = resolvePersonalData(c.personal_data, c.pseudonymise_key_file, tables);
  return {
    source,
    pipelineFile,
    dest: c.dest ?? DEFAULTS.dest,
    s3: { endpoint: c.s3_endpoint, region: c.s3_region, checksumWhenRequired: c.s3_checksum_when_required, sse: s3Encryption(c) },
    format: c.format ?? DEFAULTS.format,
    formatOptions: {
      gzip: c.gzip ?? false,
      csvFormulaGuard: c.csv_formula_guard ?? false,
      rowGroupRows: c.row_group_rows,
      parquetWriter: c.parquet_writer,
    },
    workers: c.workers,
    maxFileRows: c.max_file_rows ?? DEFAULTS.maxFileRows,
    maxFileBytes: c.max_file_bytes ?? DEFAULTS.maxFileBytes,
    schools: c.schools,
    resources: c.resources,
    customResources,
    fullRefresh: c.full_refresh ?? false,
    concurrency: c.concurrency ?? DEFAULTS.concurrency,
    // Each task holds one page in hand and fetches the next ahead: fewer connections than that
    // would queue requests behind each other, and --concurrency would not mean what it says.
    connectionsPerDomain: c.connections_per_domain ?? Math.max(DEFAULTS.connectionsPerDomain, 2 * (c.concurrency ?? DEFAULTS.concurrency)),
    perPage: c.per_page ?? DEFAULTS.perPage,
    lookbackSeconds: c.lookback_seconds ?? DEFAULTS.lookbackSeconds,
    snapshotEveryHours: c.snapshot_every_hours ?? DEFAULTS.snapshotEveryHours,
    snapshotEveryHoursFor: (resource) =>
      c.resource_options?.[resource]?.snapshot_every_hours ?? c.snapshot_every_hours ?? DEFAULTS.snapshotEveryHours,
    checkpointPages: c.checkpoint_pages ?? DEFAULTS.checkpointPages,
    checkpointSeconds: c.checkpoint_seconds ?? DEFAULTS.checkpointSeconds,
    waitForLockSeconds: c.wait_for_lock ?? 0,
    windows: c.windows ?? 1,
    purgeOnRevoke: c.purge_on_revoke ?? false,
    shard: { index, count },
    progress: c.progress ?? 'auto',
    logLevel: c.log_level ?? 'info',
    retry: {
      ...(c.max_retries !== undefined ? { maxAttempts: c.max_retries + 1 } : {}),
      ...(c.max_retry_seconds !== undefined ? { maxElapsedMs: c.max_retry_seconds * 1000 } : {}),
    },
    personalData,
  };
}

function stripUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

export { parseDomains };

/** --s3-sse / --s3-sse-kms-key-id; a key id alone is a mistake, not a silent default. */
function s3Encryption(c: PipelineConfig): RunConfig['s3']['sse'] {
  if (c.s3_sse_kms_key_id !== undefined && c.s3_sse !== 'aws:kms') {
    throw new ConfigError('s3_sse_kms_key_id (--s3-sse-kms-key-id) needs s3_sse aws:kms (--s3-sse aws:kms)');
  }
  if (c.s3_sse === undefined) return undefined;
  return c.s3_sse_kms_key_id === undefined ? { type: c.s3_sse } : { type: c.s3_sse, kmsKeyId: c.s3_sse_kms_key_id };
}
