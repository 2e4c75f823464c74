import { spawn } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalSink } from '../../src/sink/local.ts';
import { readDirective } from '../../src/manifest/state-store.ts';
import { readSecretFile } from '../../src/config/credentials.ts';
import { logLine } from '../../src/cli/log.ts';
import { checkRunPipeline } from '../../src/cli/webhooks.ts';
import { post } from './http.ts';

const SECRET = 'cli-secret-abcdef0123456789';
let root: string | undefined;
afterEach(async () => {
  if (root) await rm(root, { recursive: true, force: true });
  root = undefined;
});

describe('webhooks serve (CLI)', () => {
  it('listens, logs JSON lines without the secret or the token, stops on SIGTERM', async () => {
    root = await mkdtemp(join(tmpdir(), 'wh-cli-'));
    const dest = join(root, 'dest');
    await mkdir(dest);
    const secretFile = join(root, 'secret');
    await writeFile(secretFile, SECRET + '\n', { mode: 0o600 });
    const child = spawn(
      process.execPath,
      [
        'bin/school-export.js',
        'webhooks',
        'serve',
        '--dest',
        dest,
        '--secret-file',
        secretFile,
        '--port',
        '0',
        '--token-dir',
        join(root, 'tokens'),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    // log lines go to stderr (one JSON object each); stdout stays empty
    let stdout = '';
    child.stdout.on('data', (c) => (stdout += c));
    const lines: any[] = [];
    const rl = createInterface({ input: child.stderr });
    const listening = new Promise<any>((resolve, reject) => {
      rl.on('line', (l) => {
        const e = JSON.parse(l);
        lines.push(e);
        if (e.event === 'listening') resolve(e);
      });
      child.once('exit', (code) => reject(new Error(`exited ${code}: ${JSON.stringify(lines)}`)));
    });
    const ready = await listening;
    expect(ready.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/webhooks\/<secret>$/);
    const url = ready.url.replace('<secret>', SECRET);
    const r = await post(
      url,
      JSON.stringify({
        payload_type: 'schoolApproved',
        school_id: 'A42',
        school_name: 'S',
        school_token: 'tok-CLI-999',
        school_la_code: '1',
        school_urn: '2',
        school_establishment_number: '3',
      }),
    );
    expect(r.status).toBe(200);
    const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exit).toBe(0);
    expect(lines.map((l) => l.event)).toEqual(['listening', 'webhook', 'stopping']);
    for (const l of lines) expect(l).toMatchObject({ level: 'info', time: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/) });
    expect(Object.keys(lines[0]).slice(0, 3)).toEqual(['level', 'time', 'event']);
    expect(stdout).toBe('');
    expect(lines[1]).toMatchObject({ payload_type: 'schoolApproved', school_id: 'A42', duplicate: false });
    const all = JSON.stringify(lines) + stdout;
    expect(all).not.toContain(SECRET);
    expect(all).not.toContain('tok-CLI-999');
    expect((await readDirective(new LocalSink(dest), 'A42'))!.force_full_seq).toBe(1);
  });

  it('secret file checks and log line formats', async () => {
    const dir = (root = await mkdtemp(join(tmpdir(), 'wh-cli-')));
    const f = join(dir, 's');
    await writeFile(f, '  \n', { mode: 0o600 });
    expect(() => readSecretFile(f, '--secret-file')).toThrow(/--secret-file .* is empty/);
    expect(() => readSecretFile(join(dir, 'missing'), '--secret-file')).toThrow(/cannot read it \(ENOENT\)/);
    await writeFile(f, 'abc\n');
    await chmod(f, 0o644);
    const warnings: string[] = [];
    expect(readSecretFile(f, '--secret-file', { warn: (w) => warnings.push(w) })).toBe('abc');
    expect(warnings[0]).toMatch(/chmod 600/);
    const now = new Date('2026-11-23T10:00:00.000Z');
    expect(logLine({ event: 'webhook', school_id: 'A1' }, { now })).toBe(
      '{"level":"info","time":"2026-11-23T10:00:00.000Z","event":"webhook","school_id":"A1"}\n',
    );
    expect(JSON.parse(logLine({ event: 'webhook_rejected', status: 401 }))).toMatchObject({ level: 'warn', event: 'webhook_rejected' });
    expect(JSON.parse(logLine({ event: 'webhook_failed', status: 500 }))).toMatchObject({ level: 'error' });
    expect(logLine({ event: 'webhook', reason: 'a\u001bb' }, { tty: true })).toMatch(/^\d\d:\d\d:\d\d webhook reason=a\uFFFDb\n$/);
  });

  it('--run PIPELINE is checked at start, as the runs will read it: a missing file or token is one line, exit 2', async () => {
    const dir = (root = await mkdtemp(join(tmpdir(), 'wh-cli-')));
    expect(() => checkRunPipeline(join(dir, 'nope.json'), { dest: dir }, {})).toThrow(/nope\.json/);
    const p = join(dir, 'p.json');
    await writeFile(p, JSON.stringify({ api_url: 'https://api.example.com' }));
    expect(() => checkRunPipeline(p, { dest: dir }, {})).toThrow(/no access token: set SCHOOL_API_TOKEN/);
    expect(() => checkRunPipeline(p, { dest: dir }, { SCHOOL_API_TOKEN: 'tok' })).not.toThrow();
    await writeFile(p, JSON.stringify({ api_url: 'https://api.example.com', format: 'xls' }));
    expect(() => checkRunPipeline(p, { dest: dir }, { SCHOOL_API_TOKEN: 'tok' })).toThrow(expect.objectContaining({ code: 'E_CONFIG' }));
  });
});
