import { spawn } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalSink } from '../../src/sink/local.ts';
import { readDirective } from '../../src/manifest/state-store.ts';
import { logLine, readSecretFile } from '../../src/cli/webhooks.ts';
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
        'bin/run-ts.js',
        'test/webhooks/fixtures/cli.mts',
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
    let stderr = '';
    child.stderr.on('data', (c) => (stderr += c));
    const lines: any[] = [];
    const rl = createInterface({ input: child.stdout });
    const listening = new Promise<any>((resolve, reject) => {
      rl.on('line', (l) => {
        const e = JSON.parse(l);
        lines.push(e);
        if (e.event === 'listening') resolve(e);
      });
      child.once('exit', (code) => reject(new Error(`exited ${code}: ${stderr}`)));
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
    expect(lines[1]).toMatchObject({ payload_type: 'schoolApproved', school_id: 'A42', duplicate: false });
    const all = JSON.stringify(lines) + stderr;
    expect(all).not.toContain(SECRET);
    expect(all).not.toContain('tok-CLI-999');
    expect((await readDirective(new LocalSink(dest), 'A42'))!.force_full_seq).toBe(1);
  });

  it('secret file checks and log line formats', async () => {
    const dir = (root = await mkdtemp(join(tmpdir(), 'wh-cli-')));
    const f = join(dir, 's');
    await writeFile(f, '  \n', { mode: 0o600 });
    expect(() => readSecretFile(f)).toThrow(/is empty/);
    expect(() => readSecretFile(join(dir, 'missing'))).toThrow(/cannot read it \(ENOENT\)/);
    await writeFile(f, 'abc\n');
    await chmod(f, 0o644);
    const warnings: string[] = [];
    expect(readSecretFile(f, (w) => warnings.push(w))).toBe('abc');
    expect(warnings[0]).toMatch(/chmod 600/);
    expect(JSON.parse(logLine({ event: 'webhook', school_id: 'A1' }, false))).toMatchObject({
      event: 'webhook',
      school_id: 'A1',
      at: expect.any(String),
    });
    expect(logLine({ event: 'webhook', reason: 'a\u001bb' }, true)).toMatch(/^\d\d:\d\d:\d\d webhook reason=a\uFFFDb\n$/);
  });
});
