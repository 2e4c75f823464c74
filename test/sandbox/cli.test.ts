import { afterEach, describe, expect, it, vi } from 'vitest';
import { runSandboxCommand } from '../../src/sandbox/cli.ts';
import { call } from './helpers.ts';

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
});
