import { readFileSync, statSync } from 'node:fs';
import type { Argv, CommandModule } from 'yargs';
import { ConfigError } from '../errors.ts';
import { openSink } from '../sink/index.ts';
import { startWebhookReceiver } from '../webhooks/server.ts';

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
  json?: boolean;
}

export function readSecretFile(path: string, warn: (s: string) => void = () => {}): string {
  let text: string;
  try {
    const st = statSync(path);
    if (!st.isFile()) throw new Error('not a file');
    if (st.mode & 0o077) warn(`--secret-file ${path} is readable by other users: chmod 600 it`);
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new ConfigError(`--secret-file ${path}: cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  const secret = text.trim();
  if (!secret) throw new ConfigError(`--secret-file ${path} is empty: put a random secret in it, e.g. \`openssl rand -hex 32 > ${path}\``);
  return secret;
}

/** One JSON object per line when not on a terminal (log shippers), a short line on a terminal. */
export function logLine(e: Record<string, unknown>, tty: boolean): string {
  const entry = { at: new Date().toISOString(), ...e };
  if (!tty) return JSON.stringify(entry) + '\n';
  const { at, event, ...rest } = entry as Record<string, unknown>;
  const detail = Object.entries(rest)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');
  return `${String(at).slice(11, 19)} ${String(event)} ${detail}\n`.replace(/[\u0000-\u0009\u000b-\u001f\u007f]/g, '\uFFFD');
}

const serveCommand: CommandModule<object, ServeArgs> = {
  command: 'serve',
  describe: 'receive the service webhooks at POST /webhooks/<secret> (serve it behind TLS) and act on them',
  builder: (y: Argv) =>
    y
      .option('dest', { type: 'string', demandOption: true, describe: 'the export destination the runs use: DIR or s3://bucket/prefix' })
      .option('secret-file', {
        type: 'string',
        demandOption: true,
        describe: 'file holding the secret path segment (16+ URL-safe characters)',
      })
      .option('port', { type: 'number', default: 8787 })
      .option('host', { type: 'string', default: '127.0.0.1', describe: 'listen address (a TLS reverse proxy in front)' })
      .option('run', { type: 'string', describe: 'PIPELINE file: on schoolApproved run it at once for that school' })
      .option('purge-on-revoke', {
        type: 'boolean',
        describe: "on accessRevoked/accessDeclined delete the school's exported files and state",
      })
      .option('token-dir', { type: 'string', describe: 'where school tokens from schoolApproved are kept (mode 0600); outside --dest' })
      .option('s3-endpoint', { type: 'string', describe: 'S3-compatible endpoint for an s3:// destination' })
      .option('s3-region', { type: 'string' })
      .option('max-body-bytes', { type: 'number', default: 64 * 1024 })
      .option('json', { type: 'boolean', describe: 'JSON log lines even on a terminal' }) as unknown as Argv<ServeArgs>,
  handler: async (a) => {
    const tty = Boolean(process.stdout.isTTY) && !a.json;
    const log = (e: object) => process.stdout.write(logLine(e as Record<string, unknown>, tty));
    const secret = readSecretFile(a['secret-file'], (w) => log({ event: 'warning', message: w }));
    const sink = await openSink(a.dest, { s3: { endpoint: a['s3-endpoint'], region: a['s3-region'] } });
    const rx = await startWebhookReceiver({
      sink,
      secret,
      host: a.host,
      port: a.port,
      tokenDir: a['token-dir'],
      purgeOnRevoke: a['purge-on-revoke'],
      runPipeline: a.run,
      maxBodyBytes: a['max-body-bytes'],
      log,
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
