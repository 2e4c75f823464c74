import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { call, walk } from './helpers.ts';

let sb: Sandbox;
beforeAll(async () => {
  sb = await startSandbox();
});
afterAll(() => sb.close());
beforeEach(() => sb.control.clearRequests());

const list = (school = 'A1001') => `${sb.url}/v1.0/schools/${school}/achievements`;

describe('hold', () => {
  it('pauses a walk at a known page until released, so a test can act in between', async () => {
    const hold = sb.control.hold({ school: 'A1001', resource: 'achievements', page: 3 });
    const pagesSeen: number[] = [];
    const walking = walk(`${list()}?cursor=true&per_page=10`, sb.tokens.full, (p) => void pagesSeen.push(p));
    const info = await hold.reached;
    expect(info).toMatchObject({ method: 'GET', school: 'A1001', resource: 'achievements', page: 3, region: 'uk' });
    expect(info.path).toMatch(/cursor=c/);
    // Pages 1 and 2 were answered, page 3 is not: the walk is exactly here.
    expect(pagesSeen).toEqual([1, 2]);
    const victim = sb.control.records('A1001', 'achievements')[45]!.id as string;
    sb.control.remove('A1001', 'achievements', victim);
    hold.release();
    const rows = await walking;
    expect(rows).toHaveLength(119);
    expect(rows.map((r) => r.id)).not.toContain(victim);
    sb.control.restore('A1001', 'achievements', victim);
  });

  it('holds only the first matching request; release before it arrives disarms it', async () => {
    const h = sb.control.hold({ resource: 'deletions' });
    const first = call(`${sb.url}/v1.0/schools/A1001/deletions`, { token: sb.tokens.full });
    expect((await h.reached).page).toBe(1);
    // A second request to the same path is not held while the first one still is.
    expect((await call(`${sb.url}/v1.0/schools/A1001/deletions`, { token: sb.tokens.full })).status).toBe(200);
    h.release();
    h.release(); // idempotent
    expect((await first).status).toBe(200);

    const disarmed = sb.control.hold({ path: '/deletions' });
    disarmed.release();
    expect((await call(`${sb.url}/v1.0/schools/A1001/deletions`, { token: sb.tokens.full })).status).toBe(200);
  });

  it('counts pages per method and path, restarting after clearRequests', async () => {
    const seen: number[] = [];
    const off = sb.control.onRequest({ school: 'A1004', method: 'get' }, (r) => void seen.push(r.page));
    await call(`${list('A1004')}?page=1`, { token: sb.tokens.full });
    await call(`${list('A1004')}?page=2`, { token: sb.tokens.full });
    await call(`${sb.url}/v1.0/schools/A1004/deletions`, { token: sb.tokens.full });
    await call(`${list('A1004')}?page=3`, { token: sb.tokens.full });
    sb.control.clearRequests();
    await call(`${list('A1004')}`, { token: sb.tokens.full });
    off();
    expect(seen).toEqual([1, 2, 1, 3, 1]);
  });

  it('matches on region and school, and is released when the sandbox closes', async () => {
    const other = await startSandbox({ schools: 3 });
    const h = other.control.hold({ region: 'apac', school: 'A1002' });
    await call(`${other.url}/v1.0/schools/A1002/achievements`, { token: other.tokens.full }); // uk listener: not held
    const pending = call(`${other.regions[1]!.url}/v1.0/schools/A1002/achievements`, { token: other.tokens.full });
    expect((await h.reached).region).toBe('apac');
    await other.close();
    // Answered or cut by the close: either way the request ends instead of hanging.
    expect(
      await pending.then(
        () => 'ended',
        () => 'ended',
      ),
    ).toBe('ended');
  });
});

describe('onRequest', () => {
  it('runs before the matching page is answered, awaited, until unsubscribed', async () => {
    const ids = sb.control.records('A1001', 'achievements').map((r) => r.id as string);
    let calls = 0;
    const off = sb.control.onRequest({ school: 'A1001', resource: 'achievements', page: 2 }, async () => {
      calls++;
      await Promise.resolve();
      sb.control.update('A1001', 'achievements', ids[15]!, { comment: 'changed when page 2 was asked for' });
    });
    const rows = await walk(`${list()}?per_page=10`, sb.tokens.full);
    expect(calls).toBe(1);
    expect(rows[15].comment).toBe('changed when page 2 was asked for');
    off();
    sb.control.clearRequests();
    await walk(`${list()}?per_page=10`, sb.tokens.full);
    expect(calls).toBe(1);
  });

  it('answers 500 when the hook throws, and refuses a bad match', async () => {
    const off = sb.control.onRequest({ resource: 'achievements/attributes' }, () => {
      throw new Error('hook failed');
    });
    const r = await call(`${sb.url}/v1.0/schools/A1001/achievements/attributes`, { token: sb.tokens.full });
    off();
    expect(r.status).toBe(500);
    expect(r.json.error.message).toMatch(/hook failed/);
    expect(() => sb.control.onRequest({ page: 0 }, () => undefined)).toThrow(/page must be a positive integer/);
  });
});

describe('holds over HTTP', () => {
  it('POST makes a hold, GET with wait_ms reports the request, DELETE releases it', async () => {
    const base = `${sb.url}/_control/holds`;
    const T = sb.tokens.full;
    const { id } = (await call(base, { method: 'POST', token: T, body: { school: 'A1004', resource: 'achievements', page: 1 } })).json;
    expect(id).toMatch(/^h\d+$/);
    expect((await call(`${base}/${id}`, { token: T })).json).toEqual({ reached: false, request: null });
    const pending = call(list('A1004'), { token: T });
    const state = (await call(`${base}/${id}?wait_ms=30000`, { token: T })).json;
    expect(state).toMatchObject({ reached: true, request: { school: 'A1004', page: 1, path: '/v1.0/schools/A1004/achievements' } });
    expect((await call(`${base}/${id}`, { method: 'DELETE', token: T })).status).toBe(200);
    expect((await pending).status).toBe(200);
    expect((await call(`${base}/${id}`, { token: T })).status).toBe(404);
    expect((await call(base, { method: 'POST', token: T, body: { page: 'x' } })).status).toBe(400);
  });
});
