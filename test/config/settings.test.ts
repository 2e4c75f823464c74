import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveToken } from '../../src/config/credentials.ts';
import { envKeys, envName, pipelineFromEnv } from '../../src/config/env.ts';
import { readPipelineFile } from '../../src/config/file.ts';
import { DEFAULTS, PACKAGE_ROOT, resolveRunConfig } from '../../src/config/resolve.ts';
import { pipelineSchema, SCHEMA_PATH, type PipelineKey } from '../../src/config/schema.ts';
import { ConfigError } from '../../src/errors.ts';
import { FORMATS } from '../../src/format/index.ts';
import { flagsToPipeline, typedFlags } from '../../src/cli/run.ts';
import { buildCli } from '../../src/cli/commands.ts';
import { scratch } from '../helpers/scratch.ts';

const tmp = scratch('cfg-');
const dir = () => tmp.sub();
const file = (name: string, text: string) => {
  const p = join(dir(), name);
  writeFileSync(p, text);
  return p;
};
const API = { api_url: 'https://api.example.com' };

/** Every key of PipelineConfig, listed once: the compiler makes this complete, the test compares it with the schema. */
const INTERFACE_KEYS: Record<PipelineKey, true> = {
  $schema: true,
  description: true,
  api_url: true,
  domains: true,
  auth: true,
  token_file: true,
  sandbox: true,
  dest: true,
  s3_endpoint: true,
  s3_region: true,
  s3_checksum_when_required: true,
  format: true,
  gzip: true,
  csv_formula_guard: true,
  row_group_rows: true,
  parquet_writer: true,
  workers: true,
  max_file_rows: true,
  max_file_bytes: true,
  schools: true,
  resources: true,
  custom_resources: true,
  resource_options: true,
  full_refresh: true,
  concurrency: true,
  connections_per_domain: true,
  per_page: true,
  lookback_seconds: true,
  snapshot_every_hours: true,
  max_retries: true,
  max_retry_seconds: true,
  checkpoint_pages: true,
  checkpoint_seconds: true,
  wait_for_lock: true,
  lock: true,
  property_scopes: true,
  windows: true,
  purge_on_revoke: true,
  shard: true,
  progress: true,
  log_level: true,
  metrics_file: true,
  s3_sse: true,
  s3_sse_kms_key_id: true,
  personal_data: true,
  pseudonymise_key_file: true,
};

async function runHelp(): Promise<string> {
  const cli = (await buildCli(['run', '--help'])).exitProcess(false);
  let out = '';
  await cli.parseAsync(['run', '--help'], {}, (_err, _argv, output) => {
    out = output;
  });
  return out;
}

describe('the JSON Schema is the one declaration', () => {
  it('names exactly the keys of PipelineConfig, and its format list is the format registry', () => {
    expect(Object.keys(pipelineSchema().properties).sort()).toEqual(Object.keys(INTERFACE_KEYS).sort());
    expect(pipelineSchema().properties.format!.enum).toEqual(FORMATS.map((f) => f.name));
  });

  it('every setting has a flag in `run --help`, naming its environment variable', async () => {
    const help = (await runHelp()).replace(/\s+/g, ' '); // yargs wraps lines
    const nested = new Set(['sandbox', 'custom_resources', 'resource_options', 'personal_data']); // pipeline file (or JSON in the environment) only
    for (const key of envKeys()) {
      if (nested.has(key)) {
        expect(help).toContain(envName(key));
        continue;
      }
      expect(help).toContain(`[env ${envName(key)}]`);
      expect(help).toContain(key === 'domains' ? '--domain' : `--${key.replace(/_/g, '-')}`);
    }
    expect(help).toMatch(/flag, its SCHOOL_EXPORT_<KEY> environment variable, the pipeline file, the default/);
  });

  it('shipped pipelines and samples point editors at the schema and validate', () => {
    for (const d of ['pipelines', 'samples/pipelines']) {
      for (const n of readdirSync(join(PACKAGE_ROOT, d)).filter((f) => /\.(json|ya?ml)$/.test(f))) {
        const p = join(PACKAGE_ROOT, d, n);
        const text = readFileSync(p, 'utf8');
        expect(text, p).toMatch(/\.\.\/(\.\.\/)?schema\/pipeline\.schema\.json/);
        expect(() => readPipelineFile(p, { EXPORT_BUCKET: 'b', SCHOOL_ID: 'A1' }), p).not.toThrow();
      }
    }
    expect(JSON.parse(readFileSync(SCHEMA_PATH, 'utf8')).$schema).toMatch(/json-schema\.org/);
  });
});

describe('precedence: flags > SCHOOL_EXPORT_* > pipeline file > defaults', () => {
  it('each layer wins over the ones below it, key by key', () => {
    const p = file(
      'p.json',
      JSON.stringify({ ...API, format: 'csv', concurrency: 2, per_page: 10, domains: { 'a.example': 'https://a.example' } }),
    );
    const env = { SCHOOL_EXPORT_CONCURRENCY: '3', SCHOOL_EXPORT_PER_PAGE: '20', SCHOOL_EXPORT_DOMAINS: 'b.example=https://b.example' };
    const cfg = resolveRunConfig(p, { per_page: 30 }, env);
    expect(cfg.format).toBe('csv'); // file
    expect(cfg.concurrency).toBe(3); // env over file
    expect(cfg.perPage).toBe(30); // flag over env
    expect(cfg.lookbackSeconds).toBe(DEFAULTS.lookbackSeconds); // default
    expect(cfg.source).toMatchObject({ domains: { 'a.example': 'https://a.example', 'b.example': 'https://b.example' } });
  });

  it('SCHOOL_EXPORT_API_URL alone runs against that API with defaults (not the sandbox pipeline)', () => {
    const cfg = resolveRunConfig(undefined, {}, { SCHOOL_EXPORT_API_URL: 'https://api.example.com', SCHOOL_EXPORT_DEST: 's3://b/p' });
    expect(cfg.source).toMatchObject({ kind: 'api', apiUrl: 'https://api.example.com' });
    expect(cfg.dest).toBe('s3://b/p');
    expect(cfg.pipelineFile).toBeUndefined();
  });

  it('converts environment text by the setting type and says what is wrong with a value', () => {
    const env = {
      SCHOOL_EXPORT_FULL_REFRESH: 'yes',
      SCHOOL_EXPORT_SCHOOLS: 'A1, A2',
      SCHOOL_EXPORT_RESOURCE_OPTIONS: '{"assessment_results":{"snapshot_every_hours":24}}',
    };
    expect(pipelineFromEnv(env)).toEqual({
      full_refresh: true,
      schools: ['A1', 'A2'],
      resource_options: { assessment_results: { snapshot_every_hours: 24 } },
    });
    expect(() => pipelineFromEnv({ SCHOOL_EXPORT_PER_PAGE: 'abc' })).toThrow(
      'SCHOOL_EXPORT_PER_PAGE="abc": expected an integer from 1 to 100000',
    );
    expect(() => pipelineFromEnv({ SCHOOL_EXPORT_FORMAT: 'xml' })).toThrow(
      'SCHOOL_EXPORT_FORMAT="xml": expected one of ndjson, csv, parquet',
    );
    expect(() => pipelineFromEnv({ SCHOOL_EXPORT_CONCURENCY: '2' })).toThrow('did you mean SCHOOL_EXPORT_CONCURRENCY?');
    expect(pipelineFromEnv({ SCHOOL_EXPORT_S3RVER_CHILD: '1' })).toEqual({}); // other uses of the prefix are left alone
  });
});

describe('pipeline files: YAML and ${ENV_VAR}', () => {
  it('reads YAML with interpolated strings, and JSON alike', () => {
    const p = file(
      'nightly.yaml',
      [
        'api_url: https://api.example.com',
        'dest: s3://${BUCKET}/exports',
        'format: csv',
        'schools: [A1, A2]',
        'description: costs $${X}',
      ].join('\n'),
    );
    expect(readPipelineFile(p, { BUCKET: 'my-bucket' })).toEqual({
      api_url: 'https://api.example.com',
      dest: 's3://my-bucket/exports',
      format: 'csv',
      schools: ['A1', 'A2'],
      description: 'costs ${X}',
    });
    const j = file('p.json', JSON.stringify({ ...API, dest: '${D}' }));
    expect(readPipelineFile(j, { D: '/data' }).dest).toBe('/data');
  });

  it('names the key of an unset variable, refuses the token as a setting, reports bad YAML with the file', () => {
    const p = file('p.yml', 'api_url: https://api.example.com\ndest: ${NOPE}\n');
    expect(() => readPipelineFile(p, {})).toThrow(`pipeline file ${p}: dest: \${NOPE} is not set in the environment`);
    const t = file('t.yml', 'api_url: https://api.example.com/?t=${SCHOOL_API_TOKEN}\n');
    expect(() => readPipelineFile(t, { SCHOOL_API_TOKEN: 'secret-tok' })).toThrow(/SCHOOL_API_TOKEN\} is not allowed/);
    const bad = file('b.yaml', 'api_url: [\n');
    expect(() => readPipelineFile(bad, {})).toThrow(new RegExp(`pipeline file .*b\\.yaml:2:1: not valid YAML \\(`));
    // the line and column of the problem, the message on one line (no code frame)
    expect(() => readPipelineFile(file('k.yaml', 'per_page: 1\nper_page: 2\n'), {})).toThrow(
      /k\.yaml:2:1: not valid YAML \(Map keys must be unique\)$/,
    );
    expect(() => readPipelineFile(file('n.yaml', 'dest: ./x\n  format: csv\n'), {})).toThrow(/n\.yaml:1:7: not valid YAML \([^\n]*\)$/);
  });

  it('a top-level array names the file', () => {
    const p = file('list.json', '[{"api_url": "https://x"}]');
    expect(() => readPipelineFile(p, {})).toThrow(`pipeline file ${p}: expected an object of settings`);
  });
});

describe('validation before any request (exit 2)', () => {
  it.each([
    ['/schools/{school_id}/../admin'],
    ['/schools/{school_id}/%2e%2e/admin'],
    ['/schools/%2E%2E/{school_id}'],
    ['//evil.example/{school_id}'],
    ['https://evil.example/schools/{school_id}'],
    ['/schools/./{school_id}'],
    ['/schools/{school_id}//x'],
    ['/students'],
  ])('custom_resources path %s is refused, naming the key', (path) => {
    const p = file('p.json', JSON.stringify({ ...API, custom_resources: [{ name: 'students', path }] }));
    let err: unknown;
    try {
      resolveRunConfig(p, {}, {});
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).message).toMatch(/custom_resources\[0\]\.path: expected a path under \/v1\.0 containing \{school_id\}/);
  });

  it('flag errors name the flag as typed and the value given', () => {
    const flags = (o: Record<string, unknown>) => flagsToPipeline(o as never);
    expect(() => resolveRunConfig(undefined, flags({ 'per-page': 'abc' }), {})).toThrow(
      /^--per-page abc: expected an integer from 1 to 100000$/,
    );
    expect(() => resolveRunConfig(undefined, flags({ concurrency: 0 }), {})).toThrow(
      /^--concurrency 0: expected an integer from 1 to 256$/,
    );
    const schools = { schools: '' };
    expect(() => resolveRunConfig(undefined, flags(schools), {}, typedFlags(schools as never))).toThrow(
      /^--schools "": expected a non-empty list/,
    );
    const bad = { schools: 'A1,x1' };
    expect(() => resolveRunConfig(undefined, flags(bad), {}, typedFlags(bad as never))).toThrow(
      /^--schools A1,x1: \[1\]: expected a school id like A1930499544, got "x1"$/,
    );
    expect(() => resolveRunConfig(undefined, flags({ shard: '4/4' }), {})).toThrow(
      /^--shard 4\/4: index 4 must be below the shard count 4/,
    );
    try {
      resolveRunConfig(undefined, flags({ 'per-page': 'abc' }), {});
    } catch (e) {
      expect((e as ConfigError).code).toBe('E_USAGE');
    }
  });

  it('a token with a line break or a space says so', () => {
    expect(() => resolveToken(undefined, { SCHOOL_API_TOKEN: 'abc\ndef' })).toThrow(/SCHOOL_API_TOKEN holds a line break/);
    expect(() => resolveToken(undefined, { SCHOOL_API_TOKEN: 'abc def' })).toThrow(/SCHOOL_API_TOKEN holds a space/);
    expect(resolveToken(undefined, { SCHOOL_API_TOKEN: 'abc\n' })).toBe('abc');
    const f = file('tok', 'abc\ndef\n');
    expect(() => resolveToken(f, {})).toThrow(/--token-file .* holds more than one word/);
  });
});

describe('RunConfig fields for the pipeline', () => {
  it('retry budget: --max-retries N means N+1 attempts; seconds become milliseconds; defaults documented', () => {
    expect(resolveRunConfig(undefined, API, {}).retry).toEqual({ maxAttempts: 6, maxElapsedMs: 300_000 });
    const cfg = resolveRunConfig(
      undefined,
      flagsToPipeline({ 'api-url': API.api_url, 'max-retries': 20, 'max-retry-seconds': 900 } as never),
      {},
    );
    expect(cfg.retry).toEqual({ maxAttempts: 21, maxElapsedMs: 900_000 });
    expect(resolveRunConfig(undefined, API, { SCHOOL_EXPORT_MAX_RETRIES: '0' }).retry.maxAttempts).toBe(1);
  });

  it('log level from flag or environment', () => {
    expect(resolveRunConfig(undefined, API, {}).logLevel).toBe('info');
    expect(resolveRunConfig(undefined, API, { SCHOOL_EXPORT_LOG_LEVEL: 'debug' }).logLevel).toBe('debug');
    expect(() => resolveRunConfig(undefined, { ...API, log_level: 'loud' as never }, {})).toThrow(
      /--log-level loud: expected one of debug, info, warn, error/,
    );
  });

  it('snapshot_every_hours per table (resource_options), 0 = never, unknown tables refused', () => {
    const p = file(
      'p.yaml',
      'api_url: https://api.example.com\nsnapshot_every_hours: 48\nresource_options:\n  assessment_results: { snapshot_every_hours: 6 }\n  assessment_aspects: { snapshot_every_hours: 0 }\n',
    );
    const cfg = resolveRunConfig(p, {}, {});
    expect(cfg.snapshotEveryHoursFor('assessment_results')).toBe(6);
    expect(cfg.snapshotEveryHoursFor('assessment_aspects')).toBe(0);
    expect(cfg.snapshotEveryHoursFor('assessment_resultsets')).toBe(48);
    const typo = file('t.json', JSON.stringify({ ...API, resource_options: { assesment_results: { snapshot_every_hours: 6 } } }));
    expect(() => resolveRunConfig(typo, {}, {})).toThrow(
      /resource_options\.assesment_results: no such table \(known: .*assessment_results/,
    );
    const custom = file(
      'c.json',
      JSON.stringify({
        ...API,
        custom_resources: [{ name: 'students', path: '/schools/{school_id}/students' }],
        resource_options: { students: { snapshot_every_hours: 1 } },
      }),
    );
    expect(resolveRunConfig(custom, {}, {}).snapshotEveryHoursFor('students')).toBe(1);
  });
});
