import { PassThrough } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { accessRequest, accessRevoke } from '../../src/cli/access.ts';
import { schoolsShow } from '../../src/cli/schools.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';

/**
 * A service that answers a school's paths only at the school's own regional domain (the sandbox's
 * strict region mode: 404 elsewhere, GET /schools/{id} included). `schools show`, `access request`
 * and `access revoke` find the school's domain and call it there, for a school of every region,
 * through the same entry points the CLI runs, with the configuration a user gives (--api-url,
 * --domain, SCHOOL_API_TOKEN).
 */
describe('regional access against a service that answers school paths only at their own domain', () => {
  let sb: Sandbox;
  const args = () => ({ 'api-url': sb.url, domain: Object.entries(sb.domains).map(([k, v]) => `${k}=${v}`) });
  const io = () => {
    const out = Object.assign(new PassThrough(), { isTTY: false });
    let text = '';
    out.on('data', (c: Buffer) => (text += c.toString()));
    return { io: { out, err: new PassThrough() }, text: () => text };
  };

  beforeAll(async () => {
    sb = await startSandbox({ seed: 5, schools: 6, achievementsPerSchool: 5, regionMode: 'strict' });
  });
  afterAll(async () => {
    await sb?.close();
  });
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it('the sandbox really is strict: the default domain does not know a school of another region', async () => {
    const r = await fetch(`${sb.url}/v1.0/schools/A1002`, { headers: { authorization: `Bearer ${sb.tokens.full}` } });
    expect(r.status).toBe(404);
    await r.body?.cancel();
  });

  it.each([
    ['A1001', 'uk'],
    ['A1002', 'apac'],
    ['A1003', 'africa'],
  ])('schools show %s (%s) reads details, meta, permissions and ACL at its own domain', async (id, region) => {
    vi.stubEnv('SCHOOL_API_TOKEN', sb.tokens.full);
    sb.control.clearRequests();
    const t = io();
    await schoolsShow({ ...args(), id, json: true }, t.io);
    const details = JSON.parse(t.text());
    expect(details.school.id).toBe(id);
    expect(details.meta).not.toBeNull();
    expect(details.acl).not.toBeNull();
    const aboutSchool = sb.control.requests().filter((r) => r.path.includes(`/${id}`) && r.status === 200);
    expect(aboutSchool.length).toBeGreaterThanOrEqual(4);
    expect(aboutSchool.every((r) => r.region === region)).toBe(true);
  });

  it('access request and revoke reach a school of another region at its own domain', async () => {
    vi.stubEnv('SCHOOL_API_TOKEN', sb.tokens.full);
    const req = io();
    const r = await accessRequest({ ...args(), id: 'A9002', contact: ['Ada Lovelace <ada@example.org>'], json: true }, req.io);
    expect(r).toMatchObject({ school_id: 'A9002', success: true });
    const post = sb.control.requests().filter((x) => x.method === 'POST' && x.path.endsWith('/A9002/request-access'));
    expect(post.map((x) => [x.region, x.status])).toEqual([['apac', 200]]);

    const rev = io();
    const v = await accessRevoke({ ...args(), id: 'A1003', yes: true, json: true }, rev.io);
    expect(v).toMatchObject({ school_id: 'A1003', success: true, state: 'revoked' });
    const del = sb.control.requests().filter((x) => x.method === 'DELETE' && x.path.endsWith('/A1003/revoke-access'));
    expect(del.map((x) => [x.region, x.status])).toEqual([['africa', 200]]);
  });

  it('a school whose domain is not configured is named with the --domain to add; nothing is sent there', async () => {
    vi.stubEnv('SCHOOL_API_TOKEN', sb.tokens.full);
    const onlyUk = { 'api-url': sb.url, domain: [`api-apac.sandbox.test=${sb.domains['api-apac.sandbox.test']}`] };
    const before = sb.control.requests().length;
    await expect(schoolsShow({ ...onlyUk, id: 'A1003', json: true }, io().io)).rejects.toMatchObject({
      code: 'E_DOMAIN_NOT_ALLOWED',
      message: expect.stringMatching(/--domain api-africa\.sandbox\.test=/),
    });
    expect(
      sb.control
        .requests()
        .slice(before)
        .every((r) => r.region !== 'africa'),
    ).toBe(true);
  });

  it('an id no domain knows is E_NOT_FOUND naming where it looked', async () => {
    vi.stubEnv('SCHOOL_API_TOKEN', sb.tokens.full);
    await expect(schoolsShow({ ...args(), id: 'A77777', json: true }, io().io)).rejects.toMatchObject({
      code: 'E_NOT_FOUND',
      message: expect.stringMatching(/school A77777 was not found at the default domain, api\.sandbox\.test, api-apac\.sandbox\.test/),
    });
  });
});
