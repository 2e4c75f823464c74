import { afterEach, describe, expect, it, vi } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { call, walk } from './helpers.ts';

let sb: Sandbox | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await sb?.close();
  sb = undefined;
});

const firstNext = async (s: Sandbox, url: string): Promise<string> => {
  const r = await call(url, { token: s.tokens.full });
  expect(r.status).toBe(200);
  return r.json.meta.pagination.next as string;
};

describe('invalidated cursors', () => {
  it('refuse every cursor issued before the call with a 400 naming the cursor; new walks work', async () => {
    sb = await startSandbox();
    const url = `${sb.url}/v1.0/schools/A1001/achievements?cursor=true&per_page=10`;
    const next = await firstNext(sb, url);
    const deletionsNext = await firstNext(sb, `${sb.url}/v1.0/schools/A1001/deletions?cursor=true&per_page=2`);
    expect((await call(next, { token: sb.tokens.full })).status).toBe(200); // still good before
    sb.control.invalidateCursors();
    for (const old of [next, deletionsNext]) {
      const r = await call(old, { token: sb.tokens.full });
      expect(r.status).toBe(400);
      expect(r.json.error).toMatchObject({
        status: 400,
        code: 'cursor_expired',
        message: expect.stringMatching(/cursor is invalid or has expired/),
      });
    }
    expect(await walk(url, sb.tokens.full)).toHaveLength(120);
    // An unreadable cursor is a different error.
    const bogus = await call(`${sb.url}/v1.0/schools/A1001/achievements?cursor=c2.bm9wZQ`, { token: sb.tokens.full });
    expect(bogus.json.error.code).toBe('invalid_cursor');
  });

  it('can be invalidated over HTTP', async () => {
    sb = await startSandbox();
    const next = await firstNext(sb, `${sb.url}/v1.0/schools/A1001/achievements?cursor=true&per_page=10`);
    const r = await call(`${sb.url}/_control/cursors/invalidate`, { method: 'POST', token: sb.tokens.full, body: {} });
    expect(r.status).toBe(200);
    expect((await call(next, { token: sb.tokens.full })).json.error.code).toBe('cursor_expired');
  });
});

describe('cursorMaxAgeMs', () => {
  it('expires a cursor older than the limit by the server clock', async () => {
    const t0 = Date.now() + 86_400_000; // ahead of anything the sandbox handed out
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(t0);
    sb = await startSandbox({ cursorMaxAgeMs: 60_000 });
    const next = await firstNext(sb, `${sb.url}/v1.0/schools/A1001/achievements?cursor=true&per_page=10`);
    vi.setSystemTime(t0 + 60_000);
    const fresh = await call(next, { token: sb.tokens.full });
    expect(fresh.status).toBe(200);
    vi.setSystemTime(t0 + 60_001);
    expect((await call(next, { token: sb.tokens.full })).json.error.code).toBe('cursor_expired');
    // The page just served carries a new cursor, stamped with the new time.
    expect((await call(fresh.json.meta.pagination.next, { token: sb.tokens.full })).status).toBe(200);
  });

  it('is refused when negative', async () => {
    await expect(startSandbox({ cursorMaxAgeMs: -1 })).rejects.toThrow(/cursorMaxAgeMs/);
  });
});
