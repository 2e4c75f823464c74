import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { tempDir } from '../integration/helpers.ts';

const BIN = resolve(import.meta.dirname, '../../bin/school-export.js');

function run(sb: Sandbox, args: string[], env: Record<string, string> = {}) {
  const domains = Object.entries(sb.domains).flatMap(([d, u]) => ['--domain', `${d}=${u}`]);
  const { SCHOOL_EXPORT_PSEUDONYMISE_KEY_FILE: _, ...parent } = process.env;
  const child = spawn(process.execPath, [BIN, 'run', '--api-url', sb.url, ...domains, '--progress', 'none', ...args], {
    env: { ...parent, SCHOOL_API_TOKEN: sb.tokens.full, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((res) =>
    child.on('close', (code) => res({ code, stdout, stderr })),
  );
}

describe('school-export run with a personal-data policy', () => {
  let sb: Sandbox;
  const tmp = tempDir('pd-cli-');
  beforeAll(async () => {
    sb = await startSandbox({ schools: 1, achievementsPerSchool: 10 });
  });
  afterAll(async () => {
    await sb?.close();
    tmp.cleanup();
  });

  it('refuses to pseudonymise without a key: exit 2, one line, before any request', async () => {
    sb.control.clearRequests();
    const dest = join(tmp.dir, 'nokey');
    const r = await run(sb, ['--dest', dest, '--person-id', 'pseudonymise']);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/personal_data\.person_id: pseudonymise needs a secret key: pass --pseudonymise-key-file PATH/);
    expect(sb.control.requests()).toEqual([]);
    expect(existsSync(dest)).toBe(false);
  });

  it('takes the key file from the environment and says in the summary what it applied', async () => {
    const key = join(tmp.dir, 'key');
    writeFileSync(key, 'a'.repeat(48));
    const r = await run(
      sb,
      [
        '--dest',
        join(tmp.dir, 'ok'),
        '--format',
        'ndjson',
        '--person-id',
        'pseudonymise',
        '--free-text',
        'drop',
        '--personal-column',
        'achievement_students.year_group=drop',
      ],
      { SCHOOL_EXPORT_PSEUDONYMISE_KEY_FILE: key },
    );
    expect(r.code).toBe(0);
    expect(sb.control.requests().length).toBeGreaterThan(0); // the request log the first test relies on records requests
    const summary = JSON.parse(r.stdout) as { personalData: Record<string, unknown> };
    expect(summary.personalData).toMatchObject({
      person_id: 'pseudonymise',
      direct_identifier: 'keep',
      free_text: 'drop',
      columns: { 'achievement_students.year_group': 'drop' },
      key_id: expect.stringMatching(/^[0-9a-f]{16}$/),
    });
    expect(r.stderr).toContain(
      `personal data: person ids pseudonymised, direct identifiers kept, free text dropped; columns achievement_students.year_group=drop (key ${String(summary.personalData.key_id)})`,
    );
    expect(r.stderr).not.toContain('a'.repeat(32));
  });
});
