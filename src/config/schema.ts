import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { ConfigError } from '../errors.ts';
import { AJV_OPTIONS, schemaDigest } from './validator-code.ts';
import { PACKAGE_ROOT, packageFile } from './package-root.ts';
import type { FormatName, ParquetWriterName } from '../format/index.ts';
import type { PersonalDataConfig } from '../privacy/config.ts';

/**
 * The pipeline file, as users write it (snake_case keys). Every key also has a flag (kebab-case)
 * and an environment variable (SCHOOL_EXPORT_<KEY>). The JSON Schema shipped in the package,
 * schema/pipeline.schema.json, is the one declaration of what is valid: editors autocomplete from
 * it and validation runs it (ajv), so the two cannot disagree. This interface mirrors it for the
 * compiler; test/config/schema.test.ts checks they name the same keys.
 */
export interface CustomResourceConfig {
  name: string;
  path: string;
  key?: string[];
  incremental?: boolean;
  include?: string[];
}

export interface ResourceOptions {
  snapshot_every_hours?: number;
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type ProgressMode = 'auto' | 'tty' | 'json' | 'none';

export interface PipelineConfig {
  $schema?: string;
  description?: string;
  api_url?: string;
  domains?: Record<string, string>;
  auth?: 'bearer' | 'basic';
  token_file?: string;
  sandbox?: {
    seed?: number;
    schools?: number;
    achievements_per_school?: number;
    rows_per_school?: 'default' | 'small';
    max_per_page?: number;
  };
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
  resource_options?: Record<string, ResourceOptions>;
  full_refresh?: boolean;
  concurrency?: number;
  connections_per_domain?: number;
  per_page?: number;
  lookback_seconds?: number;
  snapshot_every_hours?: number;
  max_retries?: number;
  max_retry_seconds?: number;
  checkpoint_pages?: number;
  checkpoint_seconds?: number;
  wait_for_lock?: number;
  /** lease (default): a conditionally written lease keeps one run per destination; none: the scheduler does. */
  lock?: 'lease' | 'none';
  windows?: number;
  purge_on_revoke?: boolean;
  /** "table.column" -> the permission identity that guards it, for namings school-export does not recognise. */
  property_scopes?: Record<string, string>;
  shard?: string;
  progress?: ProgressMode;
  log_level?: LogLevel;
  /** Where the run's figures go in the Prometheus text format (node_exporter's textfile collector). */
  metrics_file?: string;
  /** What to do with personal data (docs/personal-data.md); default: keep everything as read. */
  personal_data?: PersonalDataConfig;
  /** File holding the pseudonymisation key (else SCHOOL_EXPORT_PSEUDONYMISE_KEY_FILE); never the key itself. */
  pseudonymise_key_file?: string;
}

export type PipelineKey = keyof PipelineConfig;

/** A JSON Schema node, as far as error messages need it. */
export interface SchemaNode {
  type?: string;
  enum?: string[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  minItems?: number;
  description?: string;
  'x-expected'?: string;
  properties?: Record<string, SchemaNode>;
  additionalProperties?: SchemaNode | boolean;
  propertyNames?: SchemaNode;
  items?: SchemaNode;
}

export { PACKAGE_ROOT };
export const SCHEMA_PATH = packageFile('schema', 'pipeline.schema.json');

let loaded: { schema: SchemaNode & { properties: Record<string, SchemaNode> }; validate: ValidateFunction } | undefined;

export function pipelineSchema(): SchemaNode & { properties: Record<string, SchemaNode> } {
  return load().schema;
}

function load(): NonNullable<typeof loaded> {
  if (loaded) return loaded;
  const text = readFileSync(SCHEMA_PATH, 'utf8');
  const schema = JSON.parse(text) as SchemaNode & { properties: Record<string, SchemaNode> };
  loaded = { schema, validate: generatedValidator(text) ?? compileValidator(schema) };
  return loaded;
}

/** The validator bin/prepare.js generated beside the compiled code, when made from this very schema text. */
function generatedValidator(text: string): ValidateFunction | undefined {
  try {
    // dist/config/'s from dist/config/ and dist/bundle/ alike; src/config/ has none
    const validate = createRequire(import.meta.url)('../config/pipeline-validate.cjs') as ValidateFunction & { schemaSha256?: string };
    return validate.schemaSha256 === schemaDigest(text) ? validate : undefined;
  } catch {
    return undefined; // running from src/, or a build without it
  }
}

function compileValidator(schema: object): ValidateFunction {
  // verbose: errors carry the failing sub-schema, from which the one-line message is phrased
  // loaded on first validation, not at import: `--help` and `--version` never pay for it
  const { Ajv } = createRequire(import.meta.url)('ajv') as typeof import('ajv');
  const ajv = new Ajv(AJV_OPTIONS);
  ajv.addKeyword('x-expected'); // our phrase for a pattern, for error messages only
  return ajv.compile(schema);
}

/** What a schema node accepts, in words: "an integer from 1 to 100000", "one of ndjson, csv, parquet". */
export function expectedOf(s: SchemaNode): string {
  if (s['x-expected']) return s['x-expected'];
  if (s.enum) return `one of ${s.enum.join(', ')}`;
  switch (s.type) {
    case 'integer':
      if (s.maximum !== undefined) return `an integer from ${s.minimum ?? 0} to ${s.maximum}`;
      return s.minimum !== undefined ? `an integer of at least ${s.minimum}` : 'an integer';
    case 'string':
      return s.minLength ? 'a non-empty string' : 'a string';
    case 'boolean':
      return 'true or false';
    case 'array':
      return s.minItems ? 'a non-empty list' : 'a list';
    case 'object':
      return 'an object';
    default:
      return 'a valid value';
  }
}

export function describeValue(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return v.length ? 'a list' : 'an empty list';
  if (typeof v === 'string') return JSON.stringify(v.length > 60 ? v.slice(0, 60) + '…' : v);
  if (typeof v === 'object') return 'an object';
  return String(v);
}

/** The first problem found: where (key path, e.g. ["custom_resources", 0, "path"]), what was expected, what was given. */
export interface Problem {
  path: (string | number)[];
  message: string;
  value: unknown;
}

function problemOf(e: ErrorObject, raw: unknown): Problem {
  const path = e.instancePath
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((p) => (/^\d+$/.test(p) ? Number(p) : p));
  let value: unknown = raw;
  for (const p of path) value = (value as Record<string | number, unknown> | undefined)?.[p];
  const parent = (e.parentSchema ?? {}) as SchemaNode;
  if (e.keyword === 'additionalProperties') {
    const key = (e.params as { additionalProperty: string }).additionalProperty;
    const known = Object.keys(parent.properties ?? {}).join(', ');
    return { path: [...path, key], message: `unknown setting (known: ${known})`, value: undefined };
  }
  if (e.keyword === 'required') {
    return { path: [...path, (e.params as { missingProperty: string }).missingProperty], message: 'required', value: undefined };
  }
  if (e.keyword === 'propertyNames') {
    const key = (e.params as { propertyName: string }).propertyName;
    const expected = parent.propertyNames?.['x-expected'] ?? 'a table name of lowercase letters, digits and _';
    return { path: [...path, key], message: `expected ${expected}`, value: undefined };
  }
  return { path, message: `expected ${expectedOf(parent)}`, value };
}

/** Validates against the shipped JSON Schema; undefined when valid. */
export function findProblem(raw: unknown): Problem | undefined {
  const { validate } = load();
  if (validate(raw)) return undefined;
  const errors = validate.errors ?? [];
  // propertyNames reports the name's own pattern failure first, with a less useful path
  const e = errors.find((x) => x.keyword === 'propertyNames') ?? errors[0];
  return e ? problemOf(e, raw) : { path: [], message: 'invalid', value: raw };
}

/** "custom_resources[0].path" */
export function keyPath(path: (string | number)[]): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? p : `.${p}`)).join('');
}

/**
 * Throws a ConfigError naming the first bad key of a pipeline file (or any object in its shape).
 * `where` prefixes the message, e.g. "pipeline file nightly.yaml".
 */
export function validatePipeline(raw: unknown, where: string): PipelineConfig {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ConfigError(`${where}: expected an object of settings ({ "api_url": ..., "dest": ... }), got ${describeValue(raw)}`);
  }
  const p = findProblem(raw);
  if (p) {
    const got = p.value === undefined ? '' : `, got ${describeValue(p.value)}`;
    throw new ConfigError(`${where}: ${keyPath(p.path)}: ${p.message}${got}`);
  }
  return checkShard(raw as PipelineConfig, `${where}: shard`);
}

/** `what` names the setting in the message: "pipeline file p.json: shard" or "--shard 4/4". */
export function checkShard(cfg: PipelineConfig, what: string): PipelineConfig {
  if (cfg.shard) {
    const [i, n] = cfg.shard.split('/').map(Number) as [number, number];
    if (i >= n) throw new ConfigError(`${what}: index ${i} must be below the shard count ${n} (shards are 0/${n} to ${n - 1}/${n})`);
  }
  return cfg;
}
