import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { runSandboxCommand } from '../../src/sandbox/cli.ts';
import { startWebhookReceiver } from '../../src/webhooks/index.ts';
import { openSink } from '../../src/sink/index.ts';
import { tempDir } from '../integration/helpers.ts';
import { call } from './helpers.ts';

function captureStdout(): () => string {
  let printed = '';
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk: any) => {
    printed += String(chunk);
    return true;
  });
  return () => printed;
}

afterEach(() => vi.restoreAllMocks());

describe('school-export sandbox', () => {
  it('prints regions, tokens, the control base and a curl line that works, then stops on SIGTERM', async () => {
    let printed = '';
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk: any) => {
      printed += String(chunk);
      return true;
    });
    const running = runSandboxCommand({ seed: 5, schools: 2, achievements: 10 });
    await vi.waitFor(() => expect(printed).toContain('curl'));
    expect(printed).toMatch(/uk\s+api\.sandbox\.test\s+http:\/\/127\.0\.0\.1:\d+/);
    expect(printed).toMatch(/apac\s+api-apac\.sandbox\.test/);
    expect(printed).toMatch(/africa\s+api-africa\.sandbox\.test/);
    expect(printed).toMatch(/limited\s+sbx_limited_/);
    expect(printed).toMatch(/\/_control/);
    const m = /curl -H "Authorization: Bearer (\S+)" --compressed (\S+)/.exec(printed)!;
    expect(m).not.toBeNull();
    const r = await call(m[2], { token: m[1], gzip: true });
    expect(r.status).toBe(200);
    expect(r.json.data.map((s: any) => s.id)).toEqual(['A1001', 'A1002']);
    process.emit('SIGTERM');
    await running;
    await expect(call(m[2], { token: m[1] })).rejects.toThrow();
  });

  it('--webhook-url sends the webhooks the control API causes to the receiver (webhooks serve), end to end', async () => {
    const dest = tempDir('se-sbx-hooks-');
    const receiver = await startWebhookReceiver({ sink: await openSink(dest.dir), secret: 'a-long-enough-test-secret-123', log: () => {} });
    try {
      const printed = captureStdout();
      const running = runSandboxCommand({
        schools: 2,
        achievements: 5,
        webhookUrl: receiver.url,
        itemEnvelope: 'data',
        regionMode: 'strict',
      });
      await vi.waitFor(() => expect(printed()).toContain('Ctrl-C'));
      expect(printed()).toContain(`Webhooks: POSTed to ${receiver.url}`);
      // The line printed to try it: approve the pending school A9001 through the control API.
      const m = /curl -H "Authorization: Bearer (\S+)" -X PUT (\S+) -d '(.+)'/.exec(printed())!;
      expect(m).not.toBeNull();
      expect((await call(m[2]!, { method: 'PUT', token: m[1]!, body: m[3] })).json).toEqual({ success: true, state: 'approved' });
      const directive = join(dest.dir, '_state/_directives/school_id=A9001.json');
      expect(existsSync(directive)).toBe(true); // setAccess answers after the delivery
      expect(JSON.parse(readFileSync(directive, 'utf8')).force_full_seq).toBe(1);
      // The other options reached the sandbox too.
      const base = /uk\s+\S+\s+(http:\/\/\S+)/.exec(printed())![1]!;
      expect((await call(`${base}/v1.0/schools/A1001`, { token: m[1]! })).json.data.id).toBe('A1001');
      expect((await call(`${base}/v1.0/schools/A1002`, { token: m[1]! })).status).toBe(404);
      process.emit('SIGTERM');
      await running;
    } finally {
      await receiver.close();
      dest.cleanup();
    }
  });

  it('says webhooks are off without --webhook-url, and refuses a URL that is not http(s)', async () => {
    const printed = captureStdout();
    const running = runSandboxCommand({ schools: 1 });
    await vi.waitFor(() => expect(printed()).toContain('Ctrl-C'));
    expect(printed()).toContain('Webhooks: off');
    process.emit('SIGTERM');
    await running;
    await expect(runSandboxCommand({ webhookUrl: 'ftp://x' })).rejects.toThrow(/webhook URL must be http or https/);
  });
});
