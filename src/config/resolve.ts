import { resolve } from 'node:path';
import type { ParquetWriterName } from '../format/index.ts';
import { ConfigError } from '../errors.ts';
import { RESOURCES, tableSchemas } from '../resources/index.ts';
import { mergePersonalData, resolvePersonalData, type PersonalDataSettings } from '../privacy/config.ts';
import { refuseChangeSettings } from '../privacy/guard.ts';
import { selectResources } from '../resources/index.ts';
import { checkPropertyScopes } from '../resources/scopes.ts';
import { normaliseBaseUrl, parseDomains } from './credentials.ts';
import { pipelineFromEnv } from './env.ts';
import { readPipelineFile } from './file.ts';
import {
  checkShard,
  describeValue,
  findProblem,
  keyPath,
  PACKAGE_ROOT,
  type CustomResourceConfig,
  type LogLevel,
  type PipelineConfig,
  type PipelineKey,
  type ProgressMode,
} from './schema.ts';

/** The package's own pipelines/ folder, whatever the working directory. */
export { PACKAGE_ROOT };
export const DEFAULT_PIPELINE = resolve(PACKAGE_ROOT, 'pipelines/sandbox.json');

export interface RunConfig {
  source:
    | { kind: 'api'; apiUrl: string; domains: Record<string, string>; auth: 'bearer' | 'basic'; tokenFile?: string }
    | {
        kind: 'sandbox';
        seed: number;
        schools: number;
        achievementsPerSchool: number;
        rowsPerSchool?: 'default' | 'small';
        maxPerPage?: number;
      };
  pipelineFile?: string;
  dest: string;
  s3: { endpoint?: string; region?: string; checksumWhenRequired?: boolean; sse?: { type: 'AES256' | 'aws:kms'; kmsKeyId?: string } };
  format: NonNullable<PipelineConfig['format']>;
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
  /** Hours between full snapshots of tables without deletion records; 0 = never. Per table: snapshotEveryHoursFor. */
  snapshotEveryHours: number;
  /** Per table: resource_options.<table>.snapshot_every_hours, else snapshotEveryHours (0 = never). */
  snapshotEveryHoursFor: (resource: string) => number;
  /** The per-table overrides snapshotEveryHoursFor reads (tables named in resource_options, checked to exist). */
  snapshotHoursByResource: Record<string, number>;
  /** The retry budget of one request: attempts in all (first included) and time spent retrying. */
  retry: { maxAttempts: number; maxElapsedMs: number };
  /** A long read commits a checkpoint every this many pages (0: never) ... */
  checkpointPages: number;
  /** ... or every this many seconds (0: never), whichever comes first. */
  checkpointSeconds: number;
  /** Wait this long for another run's lease on the destination before giving up (0: do not wait). */
  waitForLockSeconds: number;
  /** lease: one run per destination by a conditionally written lease; none: the scheduler guarantees it. */
  lock: 'lease' | 'none';
  /** "table.column" -> permission identity (property_scopes), checked against the run's tables. */
  propertyScopes: Record<string, string>;
  /** A full paginated read is split into this many updated_at windows read side by side (1: off). */
  windows: number;
  /** Purge the data of schools listed as revoked or declined (as the webhook receiver's --purge-on-revoke). */
  purgeOnRevoke: boolean;
  shard: { index: number; count: number };
  progress: ProgressMode;
  logLevel: LogLevel;
  /** The Prometheus text file the run's figures are written to (none: not written). */
  metricsFile?: string;
  /** The personal-data policy and, when it pseudonymises, the key (read once, here). */
  personalData: PersonalDataSettings;
  /** --personal-data-change: accept a weaker policy or another key than the destination keeps (a flag only, never a setting). */
  personalDataChange?: boolean;
  /** --format-change: accept writing another format than the destination holds (a flag only). */
  formatChange?: boolean;
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
  maxRetries: 5,
  maxRetrySeconds: 300,
  logLevel: 'info' as const,
  progress: 'auto' as const,
  checkpointPages: 50,
  checkpointSeconds: 60,
};

/** The flag for a pipeline key, as a user types it. */
export function flagName(key: string): string {
  return key === 'domains' ? '--domain' : `--${key.replace(/_/g, '-')}`;
}

/**
 * Flags are checked against the same schema as the file; a problem names the flag and the value
 * as typed (`typed`, keyed by pipeline key), e.g. `--per-page abc: expected an integer from 1 to 100000`.
 */
export function validateFlags(flags: PipelineConfig, typed: Partial<Record<PipelineKey, unknown>> = {}): PipelineConfig {
  const p = findProblem(flags);
  if (p) {
    const [key, ...rest] = p.path as [PipelineKey, ...(string | number)[]];
    const given = typed[key] ?? flags[key];
    const shown = typeof given === 'string' ? (given === '' ? '""' : given) : Array.isArray(given) ? given.join(',') : String(given);
    const inner = rest.length ? `${keyPath(rest)}: ` : '';
    const got = rest.length && p.value !== undefined ? `, got ${describeValue(p.value)}` : '';
    throw new ConfigError(`${flagName(key)} ${shown}: ${inner}${p.message}${got}`, 'E_USAGE');
  }
  return checkShard(flags, `${flagName('shard')} ${flags.shard ?? ''}`);
}

/**
 * Where each setting comes from: flags win over SCHOOL_EXPORT_<KEY> environment variables, which
 * win over the pipeline file, which wins over defaults. With no file and no API URL (flag or
 * environment), the package's sandbox pipeline runs. `typed` holds flag values as typed, for messages.
 */
export function resolveRunConfig(
  file: string | undefined,
  flags: PipelineConfig,
  env: NodeJS.ProcessEnv = process.env,
  typed: Partial<Record<PipelineKey, unknown>> = {},
): RunConfig {
  const fromFlags = validateFlags(stripUndefined(flags), typed);
  refuseChangeSettings(env);
  const fromEnv = pipelineFromEnv(env);
  const pipelineFile = file ?? (fromFlags.api_url || fromEnv.api_url ? undefined : DEFAULT_PIPELINE);
  const fromFile = pipelineFile ? readPipelineFile(pipelineFile, env) : {};
  const c: PipelineConfig = { ...fromFile, ...fromEnv, ...fromFlags };
  c.personal_data = mergePersonalData(mergePersonalData(fromFile.personal_data, fromEnv.personal_data), fromFlags.personal_data);
  c.domains = { ...fromFile.domains, ...fromEnv.domains, ...fromFlags.domains };
  const where = pipelineFile ?? 'settings';
  const snapshotHoursByResource = checkTables(c, where, fromFlags.resources !== undefined);

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
      achievementsPerSchool: c.sandbox.achievements_per_school ?? (c.sandbox.rows_per_school === 'small' ? 2 : 500),
      ...(c.sandbox.rows_per_school ? { rowsPerSchool: c.sandbox.rows_per_school } : {}),
      maxPerPage: c.sandbox.max_per_page,
    };
  } else {
    throw new ConfigError(
      `${pipelineFile ?? 'flags'}: no source: set api_url (or --api-url), or a "sandbox" block to run against the built-in sandbox`,
    );
  }
  const [index, count] = (c.shard ?? '0/1').split('/').map(Number) as [number, number];
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
    customResources: c.custom_resources ?? [],
    fullRefresh: c.full_refresh ?? false,
    concurrency: c.concurrency ?? DEFAULTS.concurrency,
    // Each task holds one page in hand and fetches the next ahead: fewer connections than that
    // would queue requests behind each other, and --concurrency would not mean what it says.
    connectionsPerDomain: c.connections_per_domain ?? Math.max(DEFAULTS.connectionsPerDomain, 2 * (c.concurrency ?? DEFAULTS.concurrency)),
    perPage: c.per_page ?? DEFAULTS.perPage,
    lookbackSeconds: c.lookback_seconds ?? DEFAULTS.lookbackSeconds,
    snapshotEveryHours: c.snapshot_every_hours ?? DEFAULTS.snapshotEveryHours,
    snapshotEveryHoursFor: (resource) => snapshotHoursByResource[resource] ?? c.snapshot_every_hours ?? DEFAULTS.snapshotEveryHours,
    snapshotHoursByResource,
    retry: {
      maxAttempts: (c.max_retries ?? DEFAULTS.maxRetries) + 1,
      maxElapsedMs: (c.max_retry_seconds ?? DEFAULTS.maxRetrySeconds) * 1000,
    },
    checkpointPages: c.checkpoint_pages ?? DEFAULTS.checkpointPages,
    checkpointSeconds: c.checkpoint_seconds ?? DEFAULTS.checkpointSeconds,
    waitForLockSeconds: c.wait_for_lock ?? 0,
    lock: c.lock ?? 'lease',
    propertyScopes: checkPropertyScopes(c.property_scopes, selectResources(undefined, c.custom_resources ?? []), {
      where: fromFlags.property_scopes ? '--property-scopes' : where,
      generic: new Set((c.custom_resources ?? []).map((r) => r.name)),
    }),
    windows: c.windows ?? 1,
    purgeOnRevoke: c.purge_on_revoke ?? false,
    shard: { index, count },
    progress: c.progress ?? DEFAULTS.progress,
    logLevel: c.log_level ?? DEFAULTS.logLevel,
    metricsFile: c.metrics_file,
    personalData: resolvePersonalData(
      c.personal_data,
      c.pseudonymise_key_file,
      selectResources(undefined, c.custom_resources ?? []).flatMap((r) => tableSchemas(r)),
    ),
  };
}

/**
 * Table names are checked here, before any request: `resources` and `resource_options` may only
 * name tables that exist (built-in or custom; a typo would otherwise export or change nothing),
 * and a custom resource may not take a built-in name. Returns the per-table snapshot intervals.
 */
function checkTables(c: PipelineConfig, where: string, resourcesFlag: boolean): Record<string, number> {
  const builtIn = RESOURCES.map((r) => r.name);
  for (const r of c.custom_resources ?? []) {
    if (builtIn.includes(r.name))
      throw new ConfigError(`${where}: custom_resources ${r.name}: that name is a built-in table; choose another`);
  }
  const known = [...builtIn, ...(c.custom_resources ?? []).map((r) => r.name)];
  for (const name of c.resources ?? []) {
    if (!known.includes(name))
      throw new ConfigError(
        `${resourcesFlag ? '--resources' : `${where}: resources`}: unknown table ${JSON.stringify(name)} (known: ${known.join(', ')}; declare others under custom_resources)`,
      );
  }
  const out: Record<string, number> = {};
  for (const [name, o] of Object.entries(c.resource_options ?? {})) {
    if (!known.includes(name)) throw new ConfigError(`${where}: resource_options.${name}: no such table (known: ${known.join(', ')})`);
    if (o.snapshot_every_hours !== undefined) out[name] = o.snapshot_every_hours;
  }
  return out;
}

function stripUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

export { parseDomains, readPipelineFile };

/** --s3-sse / --s3-sse-kms-key-id; a key id alone is a mistake, not a silent default. */
function s3Encryption(c: PipelineConfig): RunConfig['s3']['sse'] {
  if (c.s3_sse_kms_key_id !== undefined && c.s3_sse !== 'aws:kms') {
    throw new ConfigError('s3_sse_kms_key_id (--s3-sse-kms-key-id) needs s3_sse aws:kms (--s3-sse aws:kms)');
  }
  if (c.s3_sse === undefined) return undefined;
  return c.s3_sse_kms_key_id === undefined ? { type: c.s3_sse } : { type: c.s3_sse, kmsKeyId: c.s3_sse_kms_key_id };
}
