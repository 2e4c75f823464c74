import { once } from 'node:events';
import type { Argv, Options } from 'yargs';
import { envName } from '../config/env.ts';
import { ConfigError } from '../errors.ts';
import type { PipelineConfig, PipelineKey } from '../config/schema.ts';

/**
 * What the commands share: the API options, help text that names each setting's variable and
 * default, and output helpers (terminal or NDJSON, back-pressure). Kept free of heavy imports:
 * every command's --help loads it.
 */

export const PRECEDENCE =
  'Every setting comes from, in this order: its flag, its SCHOOL_EXPORT_<KEY> environment variable, the pipeline file, the default. ' +
  'Pipeline-file settings without a flag of their own take JSON in SCHOOL_EXPORT_SANDBOX, SCHOOL_EXPORT_CUSTOM_RESOURCES, SCHOOL_EXPORT_RESOURCE_OPTIONS and SCHOOL_EXPORT_PERSONAL_DATA (whose classes also have flags: --person-id, --direct-identifier, --free-text, --personal-column). ' +
  'The token: SCHOOL_API_TOKEN or --token-file. S3: the standard AWS variables (AWS_PROFILE, AWS_REGION, AWS_DEFAULT_REGION, AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_S3, AWS_ACCESS_KEY_ID, ...).';

/** "rows per page [env SCHOOL_EXPORT_PER_PAGE] (default 1000)" */
export function settingHelp(key: PipelineKey, what: string, def?: string | number): string {
  return `${what} [env ${envName(key)}]${def === undefined ? '' : ` (default ${def})`}`;
}

/**
 * An integer flag. Declared without a yargs type so that a value that is not a number reaches
 * validation as typed ("--per-page abc: expected an integer from 1 to 100000") instead of NaN.
 */
/** A comma-separated flag value as its trimmed, non-empty items (undefined when the flag is absent). */
export function commaList(v: string | undefined): string[] | undefined {
  return v === undefined
    ? undefined
    : v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
}

export function integerOption(describe: string): Options {
  return { requiresArg: true, describe: `${describe} [integer]` };
}

/**
 * An integerOption's value checked where the command does not go through the pipeline schema:
 * one line naming the flag and the value as typed ("--port abc: expected an integer from 0 to
 * 65535"), never a NaN that would silently disable a limit.
 */
export function integerFlag(flag: string, value: unknown, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const n = typeof value === 'number' ? value : /^\s*-?\d+\s*$/.test(String(value)) ? Number(value) : NaN;
  if (!Number.isInteger(n) || n < min || n > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `of at least ${min}` : `from ${min} to ${max}`;
    throw new ConfigError(`--${flag} ${String(value)}: expected an integer ${range}`, 'E_USAGE');
  }
  return n;
}

/** integerFlag for a flag that may be left out. */
export function optionalIntegerFlag(flag: string, value: unknown, min: number, max?: number): number | undefined {
  return value === undefined ? undefined : integerFlag(flag, value, min, max);
}

/** The options of a command that reads a destination: a pipeline file or --dest, and the S3 settings to reach it. */
export function withDestinationOptions<T>(y: Argv<T>) {
  return y
    .positional('pipeline', { type: 'string', describe: 'pipeline file whose dest (and S3 settings) to read' })
    .option('dest', { type: 'string', describe: settingHelp('dest', 'DIR or s3://bucket/prefix', "./exports, or the pipeline file's") })
    .option('s3-endpoint', { type: 'string', describe: settingHelp('s3_endpoint', 'S3-compatible endpoint URL') })
    .option('s3-region', { type: 'string', describe: settingHelp('s3_region', 'S3 region') });
}

/** The S3 flags of a command that writes to a destination (run, compact); they mirror the pipeline file's keys. */
export interface S3WriteArgs {
  's3-endpoint'?: string;
  's3-region'?: string;
  's3-checksum-when-required'?: boolean;
  's3-sse'?: 'AES256' | 'aws:kms';
  's3-sse-kms-key-id'?: string;
}

export function withS3WriteOptions<T>(y: Argv<T>): Argv<T & S3WriteArgs> {
  return y
    .option('s3-endpoint', {
      type: 'string',
      describe: settingHelp('s3_endpoint', 'S3-compatible endpoint URL (MinIO, R2, GCS interoperability); path-style', 'AWS'),
    })
    .option('s3-region', {
      type: 'string',
      describe: settingHelp('s3_region', 'S3 region', 'AWS_REGION / AWS_DEFAULT_REGION / the profile'),
    })
    .option('s3-checksum-when-required', {
      type: 'boolean',
      describe: settingHelp(
        's3_checksum_when_required',
        'send/validate checksums only when the operation requires them',
        'on with --s3-endpoint',
      ),
    })
    .option('s3-sse', {
      choices: ['AES256', 'aws:kms'] as const,
      describe: settingHelp('s3_sse', 'server-side encryption of every object written (data, manifests, state, leases)', 'none'),
    })
    .option('s3-sse-kms-key-id', {
      type: 'string',
      describe: settingHelp('s3_sse_kms_key_id', 'with --s3-sse aws:kms: the KMS key id, ARN or alias', 'the bucket key'),
    }) as Argv<T & S3WriteArgs>;
}

/** The pipeline settings the S3 flags give. */
export function s3WriteSettings(
  a: S3WriteArgs,
): Pick<PipelineConfig, 's3_endpoint' | 's3_region' | 's3_checksum_when_required' | 's3_sse' | 's3_sse_kms_key_id'> {
  return {
    s3_endpoint: a['s3-endpoint'],
    s3_region: a['s3-region'],
    s3_checksum_when_required: a['s3-checksum-when-required'],
    s3_sse: a['s3-sse'],
    s3_sse_kms_key_id: a['s3-sse-kms-key-id'],
  };
}

export interface ApiArgs {
  'api-url'?: string;
  'token-file'?: string;
  domain?: string[];
  auth?: 'bearer' | 'basic';
}

export function withApiOptions<T>(y: Argv<T>): Argv<T & ApiArgs> {
  return y
    .option('api-url', {
      type: 'string',
      describe: settingHelp('api_url', 'base URL of the default (discovery) domain; /v1.0/... is appended'),
    })
    .option('token-file', {
      type: 'string',
      describe: settingHelp('token_file', 'file holding the access token (else $SCHOOL_API_TOKEN)'),
    })
    .option('domain', {
      type: 'string',
      array: true,
      describe: settingHelp(
        'domains',
        'NAME=URL: where to reach a regional domain named in region.domain (repeatable; env: NAME=URL,NAME=URL); the token is sent only to configured domains',
      ),
    })
    .option('auth', {
      choices: ['bearer', 'basic'] as const,
      describe: settingHelp('auth', 'how the token is presented', 'bearer'),
    }) as Argv<T & ApiArgs>;
}

/** Human output on a TTY, NDJSON when piped or with --json. */
export function wantsJson(flag: boolean | undefined, stream: NodeJS.WriteStream = process.stdout): boolean {
  return Boolean(flag) || !stream.isTTY;
}

export async function write(out: NodeJS.WritableStream, s: string): Promise<void> {
  if (!out.write(s)) await once(out, 'drain');
}
