/** The sandbox as real clients see it (issue 15 part 2): envelopes, access calls, Host-based next URLs, more resources. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { ApiClient } from '../../src/source/client.ts';
import { getSchool } from '../../src/discovery/service.ts';
import { call, walk } from './helpers.ts';

let sb: Sandbox;
beforeEach(async () => {
  sb = await startSandbox();
});
afterEach(() => sb.close());

const T = () => sb.tokens.full;
const uk = () => sb.url;
const apac = () => sb.domains['api-apac.sandbox.test']!;
const africa = () => sb.domains['api-africa.sandbox.test']!;

describe('item envelope', () => {
  it('answers item URLs bare by default and as { data } when asked, lists and meta unchanged', async () => {
    const achievement = (await call(`${uk()}/v1.0/schools/A1001/achievements?per_page=1`, { token: T() })).json.data[0];
    const items = [
      `${uk()}/v1.0/schools/A1001`,
      `${uk()}/v1.0/schools/A1001/achievements/${achievement.id}`,
      `${uk()}/v1.0/schools/A1001/assessment/aspects/${sb.control.records('A1001', 'aspects')[0]!.id}`,
      `${uk()}/v1.0/schools/A1001/students/${sb.control.records('A1001', 'students')[0]!.id}`,
    ];
    const attribute = sb.control.records('A1001', 'attributes')[0]!;
    items.push(`${uk()}/v1.0/schools/A1001/achievements/attributes/${attribute.id as string}`);
    const bare = await Promise.all(items.map(async (u) => (await call(u, { token: T() })).json));
    expect(bare[items.length - 1]).toEqual(attribute);
    expect(bare.every((b) => typeof b.id === 'string' && !('data' in b))).toBe(true);
    sb.control.setItemEnvelope('data');
    for (const [k, u] of items.entries()) expect((await call(u, { token: T() })).json, u).toEqual({ data: bare[k] });
    expect((await call(`${uk()}/v1.0/meta/schools/A1001`, { token: T() })).json.data.online).toBe(true);
    expect((await call(`${uk()}/v1.0/schools/A1001/achievements?per_page=1`, { token: T() })).json.data[0].id).toBe(achievement.id);
    // Write responses are single objects too.
    const body = {
      students: [{ student_id: sb.control.records('A1001', 'students')[0]!.id, points: 2 }],
      employee_id: sb.control.records('A1001', 'employees')[0]!.id,
      date: '2024-05-01',
      type: 'HW',
    };
    // Write responses are bare in both modes: the PHP client's post() reads the decoded body itself.
    const created = await call(`${uk()}/v1.0/schools/A1001/achievements`, { method: 'POST', token: T(), body });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({ id: expect.stringMatching(/^A\d+$/), type: 'Homework' });
    const edited = await call(`${uk()}/v1.0/schools/A1001/achievements/${created.json.id}`, {
      method: 'PUT',
      token: T(),
      body: { ...body, comment: 'edited' },
    });
    expect(edited.json).toMatchObject({ id: created.json.id, comment: 'edited' });
    sb.control.setItemEnvelope('bare');
    const bareCreated = await call(`${uk()}/v1.0/schools/A1001/achievements`, { method: 'POST', token: T(), body });
    expect(bareCreated.json).toMatchObject({ id: expect.stringMatching(/^A\d+$/), type: 'Homework' });
    expect(() => sb.control.setItemEnvelope('xml' as never)).toThrow(/item envelope must be one of bare, data/);
  });

  it('can be chosen at start and over HTTP', async () => {
    const other = await startSandbox({ itemEnvelope: 'data', schools: 1 });
    try {
      expect((await call(`${other.url}/v1.0/schools/A1001`, { token: other.tokens.full })).json.data.id).toBe('A1001');
      const put = await call(`${other.url}/_control/item-envelope`, { method: 'PUT', token: other.tokens.full, body: { mode: 'bare' } });
      expect(put.json).toEqual({ success: true, mode: 'bare' });
      expect((await call(`${other.url}/v1.0/schools/A1001`, { token: other.tokens.full })).json.id).toBe('A1001');
    } finally {
      await other.close();
    }
    await expect(startSandbox({ itemEnvelope: 'both' as never })).rejects.toThrow(/itemEnvelope must be one of bare, data/);
  });

  it.each(['bare', 'data'] as const)('our own client reads a school from a %s item URL', async (mode) => {
    sb.control.setItemEnvelope(mode);
    const client = new ApiClient({ apiUrl: sb.url, token: T(), domains: sb.domains, retry: { maxAttempts: 1 } });
    try {
      const school = await getSchool(client, 'A1002');
      expect(school).toMatchObject({ id: 'A1002', region: { domain: 'api-apac.sandbox.test' } });
    } finally {
      await client.close();
    }
  });
});

describe('request-access bodies', () => {
  it.each([
    ['no body', undefined],
    ['{}', {}],
    ['[] (PHP empty array)', []],
    ['contacts', { contacts: [{ first_name: 'Ada', last_name: 'Byron', email_address: 'ada@example.test' }] }],
  ])('accepts %s as a request', async (_name, body) => {
    const r = await call(`${uk()}/v1.0/schools/A9003/request-access`, { method: 'POST', token: T(), body });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ success: true, state: 'pending' });
  });

  it('refuses other bodies with a message naming what to send', async () => {
    const r = await call(`${uk()}/v1.0/schools/A9003/request-access`, { method: 'POST', token: T(), body: [1] });
    expect(r.status).toBe(400);
    expect(r.json.error.message).toMatch(/\{\} or \[\] for no contacts/);
    expect((await call(`${uk()}/v1.0/schools/A9003/request-access`, { method: 'POST', token: T(), body: { contacts: 'x' } })).status).toBe(
      422,
    );
  });
});

describe('region modes', () => {
  const access = (base: string, id: string, verb: 'request' | 'revoke') =>
    call(`${base}/v1.0/schools/${id}/${verb}-access`, { method: verb === 'request' ? 'POST' : 'DELETE', token: T() });

  it('lenient (default): access management answers at the default domain for every school, and at its own', async () => {
    expect((await access(uk(), 'A1002', 'revoke')).json).toMatchObject({ success: true, state: 'revoked' });
    expect((await access(uk(), 'A1002', 'request')).json).toMatchObject({ success: true, state: 'pending' });
    expect((await access(apac(), 'A1002', 'revoke')).status).toBe(200);
    expect((await access(africa(), 'A1002', 'request')).status).toBe(404);
    // The rest is unchanged: discovery on the default domain, lists empty and items 404 elsewhere.
    expect((await call(`${uk()}/v1.0/schools/A1002`, { token: T() })).status).toBe(200);
    // Meta, permissions and the ACL are the application's relation with the school, like access calls:
    // they answer at the default domain too, and at the school's own; a third region's is 404.
    for (const p of ['', '/permissions', '/acl']) {
      expect((await call(`${uk()}/v1.0/meta/schools/A1002${p}`, { token: T() })).status, `uk ${p}`).toBe(200);
      expect((await call(`${apac()}/v1.0/meta/schools/A1002${p}`, { token: T() })).status, `apac ${p}`).toBe(200);
      expect((await call(`${africa()}/v1.0/meta/schools/A1002${p}`, { token: T() })).status, `africa ${p}`).toBe(404);
    }
    expect((await call(`${uk()}/v1.0/meta/schools/A1002`, { token: T() })).json.data).toEqual(
      (await call(`${apac()}/v1.0/meta/schools/A1002`, { token: T() })).json.data,
    );
    // Data items stay regional.
    const item = sb.control.records('A1002', 'achievements')[0]!;
    expect((await call(`${uk()}/v1.0/schools/A1002/achievements/${item.id as string}`, { token: T() })).status).toBe(404);
    const list = await call(`${uk()}/v1.0/schools/A1005/achievements`, { token: T() });
    expect([list.status, list.json.data]).toEqual([200, []]);
  });

  it('strict: every path naming a school answers only at its own regional domain', async () => {
    sb.control.setRegionMode('strict');
    for (const [method, path] of [
      ['GET', '/schools/A1002'],
      ['GET', '/meta/schools/A1002'],
      ['GET', '/meta/schools/A1002/permissions'],
      ['GET', '/meta/schools/A1002/acl'],
      ['GET', '/schools/A1002/achievements'],
      ['GET', '/schools/A1002/deletions'],
      ['POST', '/schools/A1002/request-access'],
      ['DELETE', '/schools/A1002/revoke-access'],
    ] as const) {
      expect((await call(`${uk()}/v1.0${path}`, { method, token: T() })).status, `${method} ${path} at uk`).toBe(404);
      expect((await call(`${africa()}/v1.0${path}`, { method, token: T() })).status, `${method} ${path} at africa`).toBe(404);
      expect((await call(`${apac()}/v1.0${path}`, { method, token: T() })).status, `${method} ${path} at apac`).toBe(200);
    }
    // Discovery lists still show every region's schools on the default domain.
    expect((await call(`${uk()}/v1.0/schools/all`, { token: T() })).json.data.map((s: any) => s.id)).toContain('A1002');
    expect((await call(`${uk()}/v1.0/schools/A1001`, { token: T() })).status).toBe(200);
  });

  it('is chosen at start or over HTTP, and refuses unknown modes', async () => {
    const put = await call(`${uk()}/_control/region-mode`, { method: 'PUT', token: T(), body: { mode: 'strict' } });
    expect(put.json).toEqual({ success: true, mode: 'strict' });
    expect((await call(`${uk()}/v1.0/schools/A1002`, { token: T() })).status).toBe(404);
    expect((await call(`${uk()}/_control/region-mode`, { method: 'PUT', token: T(), body: { mode: 'loose' } })).status).toBe(400);
    const strict = await startSandbox({ regionMode: 'strict', schools: 2 });
    try {
      expect((await call(`${strict.url}/v1.0/schools/A1002`, { token: strict.tokens.full })).status).toBe(404);
    } finally {
      await strict.close();
    }
  });
});

describe('next URLs', () => {
  it('are built from the Host header (and X-Forwarded-Proto), so a client stays on the domain it used', async () => {
    const page = async (headers: Record<string, string>) =>
      (await call(`${uk()}/v1.0/schools/A1001/achievements?per_page=10&cursor=true`, { token: T(), headers })).json.meta.pagination.next;
    // A domain name: https unless a proxy says otherwise (a client behind a TLS-terminating proxy stays on https).
    expect(await page({ host: 'api.sandbox.test' })).toMatch(/^https:\/\/api\.sandbox\.test\/v1\.0\/schools\/A1001\/achievements\?/);
    expect(await page({ host: 'api.sandbox.test:8443', 'x-forwarded-proto': 'https' })).toMatch(/^https:\/\/api\.sandbox\.test:8443\//);
    expect(await page({ host: 'api.sandbox.test', 'x-forwarded-proto': 'http' })).toMatch(/^http:\/\/api\.sandbox\.test\//);
    const offset = await call(`${uk()}/v1.0/schools/A1001/achievements?per_page=10&page=2`, {
      token: T(),
      headers: { host: 'proxy.test' },
    });
    expect(offset.json.meta.pagination.previous).toBe('https://proxy.test/v1.0/schools/A1001/achievements?per_page=10&page=1');
    // An IP address or localhost: plain HTTP, as the listener is, unless a proxy says https.
    expect(await page({ host: '127.0.0.1:8080' })).toMatch(/^http:\/\/127\.0\.0\.1:8080\//);
    expect(await page({ host: '[::1]:8080' })).toMatch(/^http:\/\/\[::1\]:8080\//);
    expect(await page({ host: 'localhost:8080' })).toMatch(/^http:\/\/localhost:8080\//);
    expect(await page({ host: '10.0.0.7', 'x-forwarded-proto': 'https' })).toMatch(/^https:\/\/10\.0\.0\.7\//);
    expect(await page({})).toMatch(new RegExp(`^${uk().replace(/\./g, '\\.')}/`)); // the listener itself otherwise
  });
});

describe('students, employees, contacts, groups and classes', () => {
  const RES = ['students', 'employees', 'contacts', 'groups', 'classes'] as const;
  const TYPE = { students: 'student', employees: 'employee', contacts: 'contact', groups: 'group', classes: 'class' } as const;

  it.each(RES)('%s: lists by offset and cursor, items, updated_after, deletion records of its type', async (r) => {
    const base = `${uk()}/v1.0/schools/A1001/${r}`;
    const all = sb.control.records('A1001', r);
    expect(all.length).toBeGreaterThan(10);
    const byCursor = await walk(`${base}?cursor=true&per_page=7`, T());
    const byOffset = await walk(`${base}?per_page=7`, T());
    expect(byCursor).toEqual(all);
    expect(byOffset).toEqual(all);
    expect(all.every((o) => typeof o.id === 'string' && typeof o.mis_id === 'string' && o.updated_at && o.created_at)).toBe(true);
    expect((await call(`${base}/${all[3]!.id}`, { token: T() })).json).toEqual(all[3]);
    expect((await call(`${base}/A999`, { token: T() })).status).toBe(404);
    // A change shows up after the previous high-water mark, and the removal as a deletion record.
    // Every row so far is older (base rows are in 2023-2024); a change now is newer, even in this millisecond.
    const mark = new Date(sb.control.now().getTime() - 1).toISOString();
    const since = `${base}?updated_after=${encodeURIComponent(mark)}&per_page=100`;
    expect((await call(since, { token: T() })).json.data).toEqual([]);
    sb.control.update('A1001', r, all[2]!.id as string);
    expect((await call(since, { token: T() })).json.data.map((o: any) => o.id)).toEqual([all[2]!.id]);
    const rec = sb.control.remove('A1001', r, all[4]!.id as string);
    expect(rec).toMatchObject({ type: TYPE[r], id: all[4]!.id, mis_id: all[4]!.mis_id });
    const deletions = (await call(`${uk()}/v1.0/schools/A1001/deletions?type=${TYPE[r]}&per_page=100`, { token: T() })).json.data;
    expect(deletions.map((d: any) => d.id)).toContain(all[4]!.id);
    expect((await call(`${base}/${all[4]!.id}`, { token: T() })).status).toBe(404);
  });

  it('students and employees carry the same fields as the achievement includes', async () => {
    const a = (await call(`${uk()}/v1.0/schools/A1001/achievements?include=students,employees&per_page=20`, { token: T() })).json.data;
    const withBoth = a.find((x: any) => x.students.data.length && x.employees.data.length);
    const student = (await call(`${uk()}/v1.0/schools/A1001/students/${withBoth.students.data[0].id}`, { token: T() })).json;
    const employee = (await call(`${uk()}/v1.0/schools/A1001/employees/${withBoth.employees.data[0].id}`, { token: T() })).json;
    expect(student).toEqual(withBoth.students.data[0]);
    expect(employee).toEqual(withBoth.employees.data[0]);
  });

  it('ids of contacts, groups and classes are distinct valid A<digits> ids that change on migration', async () => {
    const ids = ['contacts', 'groups', 'classes'].flatMap((r) => sb.control.records('A1001', r).map((o) => o.id as string));
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.every((id) => /^A\d+$/.test(id))).toBe(true);
    const oldGroup = sb.control.records('A1001', 'groups')[0]!.id as string;
    expect((await call(`${uk()}/v1.0/schools/A1001/groups/${oldGroup}`, { token: T() })).status).toBe(200);
    await sb.control.migrate('A1001', 'completed');
    expect((await call(`${uk()}/v1.0/schools/A1001/groups/${oldGroup}`, { token: T() })).status).toBe(404);
    expect(sb.control.records('A1001', 'groups')[0]!.id).not.toBe(oldGroup);
  });
});
