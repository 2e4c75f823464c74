import { ConfigError } from '../errors.ts';
import { FORMAT_NAMES, PARQUET_WRITERS, type FormatName, type ParquetWriterName } from '../format/index.ts';
import type { PersonalDataConfig } from '../privacy/config.ts';

/**
 * The pipeline file, as users write it (snake_case keys). Every key also has a flag (kebab-case);
 * flags win. Validation is declarative and reports the first problem in one line naming the key
 * and what is expected, so a cron mail says exactly what to fix.
 */
export interface CustomResourceConfig {
  name: string;
  path: string;
  key?: string[];
  incremental?: boolean;
  include?: string[];
}

export interface PipelineConfig {
  api_url?: string;
  domains?: Record<string, string>;
  auth?: 'bearer' | 'basic';
  token_file?: string;
  sandbox?: { seed?: number; schools?: number; achievements_per_school?: number; max_per_page?: number };
  dest?: string;
  s3_endpoint?: string;
  s3_region?: string;
  s3_checksum_when_required?: boolean;
  /** Server-side encryption of every object written to S3. */
  s3_sse?: 'AES256' | 'aws:kms';
  /** With s3_sse aws:kms: the KMS key (id, ARN or alias/name); default the bucket's AWS-managed key. */
  s3_sse_kms_key_id?: string;
  format?: FormatName;
  gzip?: boolean;
  csv_formula_guard?: boolean;
  row_group_rows?: number;
  parquet_writer?: ParquetWriterName;
  workers?: number;
  max_file_rows?: number;
  max_file_bytes?: number;
  schools?: string[];
  resources?: string[];
  custom_resources?: CustomResourceConfig[];
  full_refresh?: boolean;
  concurrency?: number;
  connections_per_domain?: number;
  per_page?: number;
  lookback_seconds?: number;
  snapshot_every_hours?: number;
  resource_options?: Record<string, { snapshot_every_hours?: number }>;
  checkpoint_pages?: number;
  checkpoint_seconds?: number;
  wait_for_lock?: number;
  windows?: number;
  purge_on_revoke?: boolean;
  shard?: string;
  log_level?: 'debug' | 'info' | 'warn' | 'error';
  max_retries?: number;
  max_retry_seconds?: number;
  progress?: 'auto' | 'tty' | 'json' | 'none';
  /** What to do with personal data (docs/personal-data.md); default: keep everything as read. */
  personal_data?: PersonalDataConfig;
  /** File holding the pseudonymisation key (else SCHOOL_EXPORT_PSEUDONYMISE_KEY_FILE); never the key itself. */
  pseudonymise_key_file?: string;
}

type Check = (v: unknown, key: string) => void;

const fail = (key: string, expected: string, v: unknown): never => {
  const got = v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v === 'string' ? JSON.stringify(v).slice(0, 40) : typeof v;
  throw new ConfigError(`${key}: expected ${expected}, got ${got}`);
};
const str: Check = (v, k) => void (typeof v === 'string' && v.length > 0 ? 0 : fail(k, 'a non-empty string', v));
const bool: Check = (v, k) => void (typeof v === 'boolean' ? 0 : fail(k, 'true or false', v));
const int =
  (min: number, max = Number.MAX_SAFE_INTEGER): Check =>
  (v, k) =>
    void (Number.isInteger(v) && (v as number) >= min && (v as number) <= max ? 0 : fail(k, `an integer from ${min} to ${max}`, v));
const oneOf =
  (...vals: string[]): Check =>
  (v, k) =>
    void (typeof v === 'string' && vals.includes(v) ? 0 : fail(k, `one of ${vals.join(', ')}`, v));
const arrayOf =
  (item: Check): Check =>
  (v, k) => {
    if (!Array.isArray(v)) fail(k, 'an array', v);
    (v as unknown[]).forEach((x, i) => item(x, `${k}[${i}]`));
  };
const record =
  (value: Check): Check =>
  (v, k) => {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) fail(k, 'an object', v);
    for (const [kk, vv] of Object.entries(v as object)) value(vv, `${k}.${kk}`);
  };
const object =
  (shape: Record<string, Check>, required: string[] = []): Check =>
  (v, k) => {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) fail(k, 'an object', v);
    const o = v as Record<string, unknown>;
    for (const key of Object.keys(o)) {
      if (!(key in shape)) {
        throw new ConfigError(`${k ? k + '.' : ''}${key}: unknown setting (known: ${Object.keys(shape).join(', ')})`);
      }
      if (o[key] !== undefined) shape[key]!(o[key], k ? `${k}.${key}` : key);
    }
    for (const r of required) if (o[r] === undefined) throw new ConfigError(`${k ? k + '.' : ''}${r}: required`);
  };

const schoolId: Check = (v, k) => void (typeof v === 'string' && /^A\d+$/.test(v) ? 0 : fail(k, 'a school id like A1234', v));
const resourceName: Check = (v, k) =>
  void (typeof v === 'string' && /^[a-z][a-z0-9_]{0,62}$/.test(v) ? 0 : fail(k, 'a table name of lowercase letters, digits and _', v));
const shard: Check = (v, k) => void (typeof v === 'string' && /^\d+\/[1-9]\d*$/.test(v) ? 0 : fail(k, 'I/N, e.g. 0/4', v));

export const PIPELINE_SCHEMA: Record<string, Check> = {
  $schema: str,
  description: str,
  api_url: str,
  domains: record(str),
  auth: oneOf('bearer', 'basic'),
  token_file: str,
  sandbox: object({ seed: int(0), schools: int(1, 10_000), achievements_per_school: int(0, 10_000_000), max_per_page: int(1, 100_000) }),
  dest: str,
  s3_endpoint: str,
  s3_region: str,
  s3_checksum_when_required: bool,
  s3_sse: oneOf('AES256', 'aws:kms'),
  s3_sse_kms_key_id: str,
  format: oneOf(...FORMAT_NAMES),
  gzip: bool,
  csv_formula_guard: bool,
  row_group_rows: int(100, 10_000_000),
  parquet_writer: oneOf(...PARQUET_WRITERS),
  workers: int(0, 64),
  max_file_rows: int(1),
  max_file_bytes: int(1024),
  schools: arrayOf(schoolId),
  resources: arrayOf(resourceName),
  custom_resources: arrayOf(
    object({ name: resourceName, path: str, key: arrayOf(str), incremental: bool, include: arrayOf(resourceName) }, ['name', 'path']),
  ),
  full_refresh: bool,
  concurrency: int(1, 256),
  connections_per_domain: int(1, 256),
  per_page: int(1, 100_000),
  lookback_seconds: int(0, 7 * 24 * 3600),
  snapshot_every_hours: int(0, 24 * 365),
  resource_options: record(object({ snapshot_every_hours: int(0, 24 * 365) })),
  checkpoint_pages: int(0, 1_000_000),
  checkpoint_seconds: int(0, 7 * 24 * 3600),
  wait_for_lock: int(0, 24 * 3600),
  windows: int(1, 64),
  purge_on_revoke: bool,
  shard,
  progress: oneOf('auto', 'tty', 'json', 'none'),
  log_level: oneOf('debug', 'info', 'warn', 'error'),
  max_retries: int(0, 100),
  max_retry_seconds: int(1, 24 * 3600),
  personal_data: object({
    person_id: oneOf('keep', 'pseudonymise'),
    direct_identifier: oneOf('keep', 'pseudonymise', 'drop'),
    free_text: oneOf('keep', 'drop'),
    columns: record(oneOf('keep', 'pseudonymise', 'drop')),
  }),
  pseudonymise_key_file: str,
};

/** Throws ConfigError naming the first bad key. `where` prefixes the message (file name or 'flags'). */
export function validatePipeline(raw: unknown, where: string): PipelineConfig {
  try {
    object(PIPELINE_SCHEMA)(raw, '');
  } catch (e) {
    if (e instanceof ConfigError) throw new ConfigError(`${where}: ${e.message}`);
    throw e;
  }
  const cfg = raw as PipelineConfig & { $schema?: string; description?: string };
  if (cfg.custom_resources) {
    for (const r of cfg.custom_resources) {
      if (!r.path.startsWith('/') || !r.path.includes('{school_id}')) {
        throw new ConfigError(
          `${where}: custom_resources ${r.name}.path: expected a path under /v1.0 containing {school_id}, e.g. /schools/{school_id}/students`,
        );
      }
    }
  }
  if (cfg.shard) {
    const [i, n] = cfg.shard.split('/').map(Number) as [number, number];
    if (i >= n)
      throw new ConfigError(`${where}: shard: index ${i} must be below the shard count ${n} (shards are 0/${n} to ${n - 1}/${n})`);
  }
  return cfg;
}
