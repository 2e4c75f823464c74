import { ConfigError } from '../errors.ts';
import type { Argv, CommandModule } from 'yargs';
import { readSecretFile, resolveToken } from '../config/credentials.ts';
import { resolveRunConfig } from '../config/resolve.ts';
import type { PipelineConfig } from '../config/schema.ts';
import { envSetting } from '../config/env.ts';
import type { LogLevel } from '../config/schema.ts';
import { openSink } from '../sink/index.ts';
import { QUEUE_DEFAULTS } from '../webhooks/run-queue.ts';
import { startWebhookReceiver } from '../webhooks/server.ts';
import { integerFlag, integerOption, optionalIntegerFlag } from './common.ts';
import { createLogger, LOG_LEVELS, type LogEvent } from './log.ts';

/** `school-export webhooks serve`: options, the secret file, log output and signals; the receiver is src/webhooks/. */
interface ServeArgs {
  dest: string;
  'secret-file': string;
  port: number;
  host: string;
  run?: string;
  'purge-on-revoke'?: boolean;
  'token-dir'?: string;
  's3-endpoint'?: string;
  's3-region'?: string;
  'max-body-bytes'?: number;
  'max-runs'?: number;
  'run-batch'?: number;
  'wait-for-lock'?: number;
  'run-attempts'?: number;
  'run-timeout'?: number;
  'run-delay'?: number;
  'log-level'?: LogLevel;
  json?: boolean;
}

/** Settings also taken from the environment (SCHOOL_EXPORT_DEST, ...), flags first. */
function fromEnv(a: ServeArgs, env: NodeJS.ProcessEnv): ServeArgs {
  return {
    ...a,
    dest: a.dest ?? envSetting(env, 'dest'),
    's3-endpoint': a['s3-endpoint'] ?? envSetting(env, 's3_endpoint'),
    's3-region': a['s3-region'] ?? envSetting(env, 's3_region'),
    'log-level': a['log-level'] ?? (envSetting(env, 'log_level') as LogLevel | undefined),
  };
}

/**
 * `--run PIPELINE` is read now as each run will read it (with the receiver's destination): a typo
 * in the file, or no token, exits 2 at start instead of failing every queued run later.
 */
export function checkRunPipeline(file: string, flags: PipelineConfig, env: NodeJS.ProcessEnv = process.env): void {
  const cfg = resolveRunConfig(file, flags, env);
  if (cfg.source.kind === 'api') resolveToken(cfg.source.tokenFile, env);
}

const serveCommand: CommandModule<object, ServeArgs> = {
  command: 'serve',
  describe: 'receive the service webhooks at POST /webhooks/<secret> (serve it behind TLS) and act on them',
  builder: (y: Argv) =>
    y
      .option('dest', {
        type: 'string',
        describe: 'the export destination the runs use: DIR or s3://bucket/prefix [env SCHOOL_EXPORT_DEST]',
      })
      .option('secret-file', {
        type: 'string',
        demandOption: true,
        describe: 'file holding the secret path segment (16+ URL-safe characters)',
      })
      .option('port', { ...integerOption('port to listen on'), default: 8787 })
      .option('host', { type: 'string', default: '127.0.0.1', describe: 'listen address (a TLS reverse proxy in front)' })
      .option('run', {
        type: 'string',
        describe: 'PIPELINE file: approved schools are queued and exported by runs of it, one run at a time (docs/webhooks.md)',
      })
      .option('max-runs', { ...integerOption('with --run: runs going at once for this destination (each takes shard I of N)'), default: 1 })
      .option('run-batch', { ...integerOption('with --run: schools per run at most'), default: QUEUE_DEFAULTS.batchSize })
      .option('wait-for-lock', {
        ...integerOption("with --run: seconds a run waits for the destination's lease (a nightly run) before it is retried later"),
        default: QUEUE_DEFAULTS.waitForLockSeconds,
      })
      .option('run-attempts', {
        ...integerOption('with --run: runs a school gets before the receiver gives up on it (the next nightly run exports it)'),
        default: QUEUE_DEFAULTS.maxAttempts,
      })
      .option('run-delay', {
        ...integerOption('with --run: seconds an approval to an idle queue waits for others to join its run'),
        default: QUEUE_DEFAULTS.collectMs / 1000,
      })
      .option('run-timeout', {
        ...integerOption('with --run: seconds after which a run is stopped and its unexported schools retried (0: no limit)'),
        default: QUEUE_DEFAULTS.runTimeoutSeconds,
      })
      .option('purge-on-revoke', {
        type: 'boolean',
        describe: "on accessRevoked/accessDeclined delete the school's exported files and state",
      })
      .option('token-dir', { type: 'string', describe: 'where school tokens from schoolApproved are kept (mode 0600); outside --dest' })
      .option('s3-endpoint', {
        type: 'string',
        describe: 'S3-compatible endpoint for an s3:// destination [env SCHOOL_EXPORT_S3_ENDPOINT]',
      })
      .option('s3-region', { type: 'string', describe: 'S3 region [env SCHOOL_EXPORT_S3_REGION, AWS_REGION]' })
      .option('max-body-bytes', { ...integerOption('largest webhook body accepted; larger ones are answered 413'), default: 64 * 1024 })
      .option('log-level', {
        choices: LOG_LEVELS,
        describe: 'least severe log line written (default info) [env SCHOOL_EXPORT_LOG_LEVEL]',
      })
      .option('json', {
        type: 'boolean',
        describe: 'JSON log lines even on a terminal (the default when stderr is not one)',
      }) as unknown as Argv<ServeArgs>,
  handler: async (args) => {
    const a = fromEnv(args, process.env);
    const port = integerFlag('port', a.port, 0, 65535);
    const maxBodyBytes = integerFlag('max-body-bytes', a['max-body-bytes'], 1);
    const queue = {
      maxRuns: optionalIntegerFlag('max-runs', a['max-runs'], 1, 64),
      batchSize: optionalIntegerFlag('run-batch', a['run-batch'], 1, 3000),
      waitForLockSeconds: optionalIntegerFlag('wait-for-lock', a['wait-for-lock'], 0),
      maxAttempts: optionalIntegerFlag('run-attempts', a['run-attempts'], 1),
      runTimeoutSeconds: optionalIntegerFlag('run-timeout', a['run-timeout'], 0),
      collectMs: (optionalIntegerFlag('run-delay', a['run-delay'], 0, 3600) ?? QUEUE_DEFAULTS.collectMs / 1000) * 1000,
    };
    if (!a.dest)
      throw new ConfigError(
        'webhooks serve: pass --dest DIR|s3://bucket/prefix (or set SCHOOL_EXPORT_DEST): the destination the runs use',
        'E_USAGE',
      );
    if (a.run) checkRunPipeline(a.run, { dest: a.dest, s3_endpoint: a['s3-endpoint'], s3_region: a['s3-region'] });
    if (a['log-level'] && !LOG_LEVELS.includes(a['log-level']))
      throw new ConfigError(`SCHOOL_EXPORT_LOG_LEVEL=${a['log-level']}: expected one of ${LOG_LEVELS.join(', ')}`);
    // log lines go to stderr (the team's log contract), JSON unless a person is watching
    const log = createLogger({ level: a['log-level'], tty: Boolean(process.stderr.isTTY) && !a.json });
    const secret = readSecretFile(a['secret-file'], '--secret-file', {
      emptyHint: `put a random secret in it, e.g. \`openssl rand -hex 32 > ${a['secret-file']}\``,
      warn: (w) => log({ event: 'config_warning', level: 'warn', message: w }),
    });
    const sink = await openSink(a.dest, { s3: { endpoint: a['s3-endpoint'], region: a['s3-region'] } });
    const rx = await startWebhookReceiver({
      sink,
      secret,
      host: a.host,
      port,
      tokenDir: a['token-dir'],
      purgeOnRevoke: a['purge-on-revoke'],
      runPipeline: a.run,
      runDest: { dest: a.dest, s3Endpoint: a['s3-endpoint'], s3Region: a['s3-region'] },
      queue,
      maxBodyBytes,
      log: (e) => log(e as LogEvent),
    });
    // the URL carries the secret: print where it listens, never the secret itself
    log({
      event: 'listening',
      url: rx.url.replace(secret, '<secret>'),
      dest: sink.url,
      purge_on_revoke: Boolean(a['purge-on-revoke']),
      run: a.run ?? null,
    });
    await new Promise<void>((resolve) => {
      const stop = () => resolve();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
    log({ event: 'stopping' });
    await rx.close();
    await sink.close();
  },
};

export const webhooksCommand: CommandModule = {
  command: 'webhooks <command>',
  describe: 'the webhook receiver',
  builder: (y: Argv) => y.command(serveCommand).demandCommand(1, 'name a subcommand: serve'),
  handler: () => {},
};
