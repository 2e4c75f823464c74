import { existsSync, readdirSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commandName, exitCodeFor } from '../../src/cli/commands.ts';
import { createLogger, levelOf } from '../../src/cli/log.ts';
import { ApiError, ConfigError, ExportError } from '../../src/errors.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { tempDir } from '../integration/helpers.ts';

const BIN = resolve(import.meta.dirname, '../../bin/school-export.js');

function cli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((res) => child.once('close', (code) => res({ code, stdout, stderr })));
}

describe('exit status', () => {
  it('configuration codes (E_CONFIG, E_USAGE, E_AUTH, E_LOCKED) exit 2, others 1', () => {
    expect(exitCodeFor(new ConfigError('x'))).toBe(2);
    expect(exitCodeFor(new ConfigError('x', 'E_USAGE'))).toBe(2);
    expect(exitCodeFor(new ApiError('E_AUTH', 'rejected', { status: 401, retriable: false }))).toBe(2);
    expect(exitCodeFor(new ExportError('E_LOCKED', 'held'))).toBe(2);
    expect(exitCodeFor(new ExportError('E_SINK', 'disk'))).toBe(1);
    expect(exitCodeFor(new Error('bug'))).toBe(1);
    expect(commandName(['--json', 'status', '--dest', 'x'])).toBe('status');
  });

  describe('against the sandbox', () => {
    let sb: Sandbox;
    beforeAll(async () => {
      sb = await startSandbox({ seed: 2, schools: 2, achievementsPerSchool: 5 });
    });
    afterAll(async () => {
      await sb?.close();
    });

    it('an invalid token (401) exits 2 with one line naming the fix, for schools and run alike, and never shows the token', async () => {
      const env = { SCHOOL_API_TOKEN: 'not-the-token-123', SCHOOL_EXPORT_API_URL: sb.url };
      const list = await cli(['schools', 'list'], env);
      expect(list.code).toBe(2);
      expect(list.stderr).toMatch(/401.*SCHOOL_API_TOKEN/);
      // a destination of its own: this test once wrote into the checkout it ran in
      const dest = tempDir('exit-codes-');
      try {
        const run = await cli(['run', '--dest', join(dest.dir, 'exports'), '--progress', 'none', '--json'], env);
        expect(run.code).toBe(2);
        expect(run.stderr).toMatch(/401/);
        expect(list.stderr + run.stderr + run.stdout).not.toContain('not-the-token-123');
        const files = readdirSync(join(dest.dir, 'exports'), { recursive: true, withFileTypes: true }).filter((e) => e.isFile());
        expect(
          files.map((e) => e.name),
          'a run refused at its first request leaves no file',
        ).toEqual([]);
      } finally {
        dest.cleanup();
      }
    });

    it('usage errors exit 2 before any request: a flag value as typed, an empty --schools, a token with a line break', async () => {
      sb.control.clearRequests();
      const env = { SCHOOL_API_TOKEN: sb.tokens.full, SCHOOL_EXPORT_API_URL: sb.url };
      const perPage = await cli(['run', '--per-page', 'abc'], env);
      expect([perPage.code, perPage.stderr.trim()]).toEqual([2, 'school-export: --per-page abc: expected an integer from 1 to 100000']);
      const schools = await cli(['run', '--schools', ''], env);
      expect([schools.code, schools.stderr.trim()]).toEqual([2, 'school-export: --schools "": expected a non-empty list']);
      const token = await cli(['schools', 'list'], { ...env, SCHOOL_API_TOKEN: 'abc\ndef' });
      expect(token.code).toBe(2);
      expect(token.stderr).toMatch(/SCHOOL_API_TOKEN holds a line break/);
      expect(sb.control.requests()).toEqual([]);
    });

    it('a group named alone says which subcommands it has (not yargs\' "Not enough non-option arguments"), exit 2', async () => {
      const r = await cli(['warehouse'], {});
      expect([r.code, r.stderr]).toEqual([
        2,
        'school-export: name an action: load, sql, dbt or manifests\n(see school-export warehouse --help)\n',
      ]);
      const s = await cli(['schools'], {});
      expect([s.code, s.stderr.split('\n')[0]]).toEqual([2, 'school-export: name a subcommand: list or show']);
    });

    it('an S3 endpoint nothing answers at: one line naming it, before any API request; exit 1 (E_SINK: the next run retries)', async () => {
      const { createServer } = await import('node:net');
      const srv = createServer();
      await new Promise<void>((res) => srv.listen(0, '127.0.0.1', res));
      const port = (srv.address() as { port: number }).port;
      await new Promise<void>((res) => srv.close(() => res()));
      sb.control.clearRequests();
      const env = {
        SCHOOL_API_TOKEN: sb.tokens.full,
        SCHOOL_EXPORT_API_URL: sb.url,
        AWS_ACCESS_KEY_ID: 'k',
        AWS_SECRET_ACCESS_KEY: 's',
        AWS_REGION: 'us-east-1',
        AWS_MAX_ATTEMPTS: '1',
      };
      const r = await cli(['run', '--dest', 's3://bucket/exports', '--s3-endpoint', `http://127.0.0.1:${port}`, '--progress', 'none'], env);
      expect(r.code).toBe(1);
      // one line of ours (on Node 20 the AWS SDK's own NodeVersionSupportWarning precedes it)
      const ours = r.stderr.split('\n').filter((l) => l.startsWith('school-export:'));
      expect(ours).toHaveLength(1);
      expect(ours[0]).toMatch(new RegExp(`^school-export: cannot reach s3://bucket/exports: .*ECONNREFUSED 127\\.0\\.0\\.1:${port}$`));
      expect(sb.control.requests()).toEqual([]);
    });

    it('commands that read an export create nothing at a mistyped --dest: one line, exit 2', async () => {
      const typo = join(process.cwd(), 'no-such-export-dir', 'exports');
      for (const args of [
        ['status', '--dest', typo],
        ['warehouse', 'load', '--dest', typo, '--into', `duckdb:${typo}.duckdb`],
      ]) {
        const r = await cli(args, {});
        expect([r.code, r.stderr.trim()]).toEqual([
          2,
          `school-export: --dest ${typo} is not an export directory; give the directory a run wrote`,
        ]);
      }
      expect(existsSync(join(process.cwd(), 'no-such-export-dir'))).toBe(false);
    });

    it('number flags of the other commands: the value as typed, exit 2, never a NaN that disables a limit', async () => {
      const secret = join(process.cwd(), 'never-read-secret');
      const body = await cli(['webhooks', 'serve', '--dest', 'exports', '--secret-file', secret, '--max-body-bytes', 'abc'], {});
      expect([body.code, body.stderr.trim()]).toEqual([2, 'school-export: --max-body-bytes abc: expected an integer of at least 1']);
      const port = await cli(['sandbox', '--port', '70000'], {});
      expect([port.code, port.stderr.trim()]).toEqual([2, 'school-export: --port 70000: expected an integer from 0 to 65535']);
      const hours = await cli(['warehouse', 'dbt', '--dialect', 'duckdb', '--freshness-hours', '2x'], {});
      expect([hours.code, hours.stderr.trim()]).toEqual([2, 'school-export: --freshness-hours 2x: expected an integer of at least 1']);
    });
  });
});

describe('log lines', () => {
  it('carry level, time and event first, and --log-level drops what is less severe', () => {
    const out = new PassThrough();
    let text = '';
    out.on('data', (c: Buffer) => (text += c.toString()));
    const log = createLogger({ level: 'warn', out, now: () => new Date('2030-01-01T00:00:00Z') });
    log({ event: 'webhook', school_id: 'A1' });
    log({ event: 'webhook_rejected', status: 404 });
    log({ event: 'webhook_failed', status: 500 });
    log({ event: 'run_exit', code: 1, signal: null });
    expect(text.trim().split('\n')).toEqual([
      '{"level":"warn","time":"2030-01-01T00:00:00.000Z","event":"webhook_rejected","status":404}',
      '{"level":"error","time":"2030-01-01T00:00:00.000Z","event":"webhook_failed","status":500}',
      '{"level":"warn","time":"2030-01-01T00:00:00.000Z","event":"run_exit","code":1,"signal":null}',
    ]);
    expect(levelOf({ event: 'run_exit', code: 0, signal: null })).toBe('info');
    expect(levelOf({ event: 'anything', level: 'debug' })).toBe('debug');
  });
});
