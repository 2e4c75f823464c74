import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { call, walk } from './helpers.ts';
import { microsOfDt } from '../../src/sandbox/time.ts';

let sb: Sandbox;
let uk: string;
let apac: string;
const T = () => sb.tokens.full;

beforeAll(async () => {
  sb = await startSandbox({ seed: 7, maxPerPage: 200 });
  uk = sb.url;
  apac = sb.regions.find((r) => r.code === 'apac')!.url;
});
afterAll(() => sb.close());

describe('sandbox handle', () => {
  it('exposes three regions, their domains and two tokens', () => {
    expect(sb.regions.map((r) => [r.code, r.domain])).toEqual([
      ['uk', 'api.sandbox.test'],
      ['apac', 'api-apac.sandbox.test'],
      ['africa', 'api-africa.sandbox.test'],
    ]);
    expect(new Set(sb.regions.map((r) => r.url)).size).toBe(3);
    expect(sb.url).toBe(sb.regions[0].url);
    expect(sb.domains['api-apac.sandbox.test']).toBe(apac);
    expect(sb.tokens.full).not.toBe(sb.tokens.limited);
  });
});

describe('auth', () => {
  it('accepts Bearer and Basic "<token>:"', async () => {
    expect((await call(`${uk}/v1.0/schools`, { token: T() })).status).toBe(200);
    const basic = 'Basic ' + Buffer.from(`${T()}:`).toString('base64');
    expect((await call(`${uk}/v1.0/schools`, { auth: basic })).status).toBe(200);
  });

  it('answers 401 for missing, unknown or malformed credentials, in the one error shape', async () => {
    const cases = [
      {},
      { token: 'nope' },
      { auth: 'Basic ' + Buffer.from(`${T()}:secret`).toString('base64') },
      { auth: 'Basic ' + Buffer.from(T()).toString('base64') },
      { auth: `Token ${T()}` },
    ];
    for (const c of cases) {
      const r = await call(`${uk}/v1.0/schools`, c);
      expect(r.status).toBe(401);
      expect(r.json).toEqual({ error: { status: 401, code: 'unauthorized', message: expect.any(String) } });
      expect(r.text).not.toContain(T());
    }
  });
});

describe('discovery and access lists', () => {
  it('lists approved (and audited) schools, all schools, and each state', async () => {
    const approved = (await call(`${uk}/v1.0/schools`, { token: T() })).json;
    expect(approved.data.map((s: any) => s.id)).toEqual(['A1001', 'A1002', 'A1003', 'A1004', 'A1005', 'A1006']);
    expect(approved.meta.pagination).toBeUndefined();
    const all = (await call(`${uk}/v1.0/schools/all`, { token: T() })).json.data;
    expect(all.length).toBe(11);
    const ids = async (list: string) => (await call(`${uk}/v1.0/schools/${list}`, { token: T() })).json.data.map((s: any) => s.id);
    expect(await ids('audited')).toEqual(['A1001', 'A1003', 'A1005']);
    expect(await ids('pending')).toEqual(['A9001', 'A9002']);
    expect(await ids('revoked')).toEqual(['A9003']);
    expect(await ids('declined')).toEqual(['A9004']);
    expect(await ids('offline')).toEqual(['A9005']);
  });

  it('shows the awkward school values: both forms of codes, countries with and without iso_3166_2', async () => {
    const all = (await call(`${uk}/v1.0/schools/all`, { token: T() })).json.data;
    expect(new Set(all.map((s: any) => typeof s.establishment_number))).toEqual(new Set(['string', 'number']));
    expect(new Set(all.map((s: any) => typeof s.la_code))).toEqual(new Set(['string', 'number']));
    expect(all.some((s: any) => 'iso_3166_2' in s.address.address_country)).toBe(true);
    expect(all.some((s: any) => !('iso_3166_2' in s.address.address_country))).toBe(true);
    const a2 = all.find((s: any) => s.id === 'A1002');
    expect(a2.region).toEqual({
      code: 'apac',
      domain: 'api-apac.sandbox.test',
      school_url: 'https://api-apac.sandbox.test/v1.0/schools/A1002',
      identifiers: { la_code: a2.la_code, establishment_number: a2.establishment_number, urn: a2.urn },
    });
    expect(all.some((s: any) => s.timezone === null)).toBe(true);
  });

  it('filters schools by postcode, la_code, establishment_number, iso_3166_2 and urn', async () => {
    const q = async (qs: string, list = '') =>
      (await call(`${uk}/v1.0/schools${list}?${qs}`, { token: T() })).json.data.map((s: any) => s.id);
    expect(await q('postcode=ls1%200ab')).toEqual(['A1001']);
    expect(await q('la_code=301')).toEqual(['A1002']);
    expect(await q('establishment_number=2000')).toEqual(['A1001']);
    expect(await q('iso_3166_2=AU')).toEqual(['A1002', 'A1005']);
    expect(await q('iso_3166_2=GB-ENG,ZA')).toEqual(['A1001', 'A1003', 'A1004', 'A1006']); // ZA: by country, without iso_3166_2
    expect(await q('urn=101013', '/all')).toEqual(['A1002']);
    expect((await call(`${uk}/v1.0/schools/all?urn=abc`, { token: T() })).status).toBe(400);
  });

  it('regional listeners only know their own schools; the default one answers any school', async () => {
    expect((await call(`${apac}/v1.0/schools`, { token: T() })).json.data.map((s: any) => s.id)).toEqual(['A1002', 'A1005']);
    expect((await call(`${uk}/v1.0/schools/A1002`, { token: T() })).json.id).toBe('A1002');
    expect((await call(`${apac}/v1.0/schools/A1001`, { token: T() })).status).toBe(404);
  });

  it('serves school meta, permissions and the ACL', async () => {
    expect((await call(`${uk}/v1.0/meta/schools/A1001`, { token: T() })).json).toEqual({
      data: { online: true, approved: true, audited: true, custom_attendance_codes: false },
    });
    const perms = (await call(`${uk}/v1.0/meta/schools/A1001/permissions`, { token: T() })).json.data;
    expect(perms.map((p: any) => p.identity)).toContain('achievements.read');
    expect(perms[0].active_from.timezone_type).toBe(3);
    const acl = (await call(`${uk}/v1.0/meta/schools/A1001/acl?with_user_type=true`, { token: T() })).json.data;
    expect(acl.mode).toBe('whitelist');
    expect(acl.ids[0]).toEqual({ id: expect.stringMatching(/^A\d+$/), type: 'student' });
    const plain = (await call(`${uk}/v1.0/meta/schools/A1001/acl`, { token: T() })).json.data;
    expect(typeof plain.ids[0]).toBe('string');
    expect((await call(`${sb.regions[2].url}/v1.0/meta/schools/A1003/acl`, { token: T() })).json.data).toEqual({ mode: null, ids: [] });
    expect((await call(`${uk}/v1.0/meta/schools/A1001/acl?with_user_type=maybe`, { token: T() })).status).toBe(400);
  });
});

describe('pagination', () => {
  const ach = () => `${uk}/v1.0/schools/A1001/achievements`;

  it('defaults to 50 per page with offset next/previous URLs carrying page', async () => {
    const p1 = (await call(ach(), { token: T() })).json;
    expect(p1.data.length).toBe(50);
    expect(p1.meta.includes).toEqual(['students', 'employees']);
    expect(p1.meta.pagination).toEqual({ next: `${ach()}?page=2`, previous: null, more: true, per_page: 50, current_page: 1 });
    const p3 = (await call(`${ach()}?page=3`, { token: T() })).json;
    expect(p3.data.length).toBe(20);
    expect(p3.meta.pagination).toEqual({ next: null, previous: `${ach()}?page=2`, more: false, per_page: 50, current_page: 3 });
    const rows = await walk(ach(), T());
    expect(rows.length).toBe(120);
    expect(new Set(rows.map((r) => r.id)).size).toBe(120);
  });

  it('omits the pagination object only when everything fits and per_page is absent', async () => {
    const few = (await call(`${uk}/v1.0/schools/A1001/achievements/attributes`, { token: T() })).json;
    expect(few.data.length).toBe(15);
    expect(few.meta.pagination).toBeUndefined();
    const forced = (await call(`${uk}/v1.0/schools/A1001/achievements/attributes?per_page=100`, { token: T() })).json;
    expect(forced.meta.pagination).toEqual({ next: null, previous: null, more: false, per_page: 100, current_page: 1 });
  });

  it('clamps per_page to the maximum and says so', async () => {
    const r = (await call(`${ach()}?per_page=5000`, { token: T() })).json;
    expect(r.data.length).toBe(120);
    expect(r.meta.pagination.per_page).toBe(200);
  });

  it('walks with opaque cursors and keeps the other parameters in next', async () => {
    const first = (await call(`${ach()}?cursor=true&per_page=40&include=students`, { token: T() })).json;
    const next = new URL(first.meta.pagination.next);
    expect(next.origin).toBe(uk);
    expect(next.searchParams.get('include')).toBe('students');
    expect(next.searchParams.get('per_page')).toBe('40');
    expect(next.searchParams.get('cursor')).toMatch(/^c2\./);
    expect(first.meta.pagination).toMatchObject({ previous: null, more: true, per_page: '40', current_page: 1 });
    const rows = await walk(`${ach()}?cursor=true&per_page=40`, T());
    expect(rows.map((r) => r.id)).toEqual((await walk(ach(), T())).map((r) => r.id));
    expect((await call(`${ach()}?cursor=bogus`, { token: T() })).status).toBe(400);
  });

  it('refuses bad per_page, page and dates with 400', async () => {
    for (const qs of [
      'per_page=0',
      'per_page=-1',
      'per_page=ten',
      'page=0',
      'page=1.5',
      'updated_after=yesterday',
      'updated_before=2024-02-30',
      'include=teachers',
    ]) {
      const r = await call(`${ach()}?${qs}`, { token: T() });
      expect(r.status, qs).toBe(400);
      expect(r.json.error.status).toBe(400);
    }
  });

  it('filters on updated_after / updated_before (exclusive)', async () => {
    const all = await walk(`${ach()}?per_page=200`, T());
    const pivot = all[60].updated_at.date; // Europe/London in January == UTC
    const after = await walk(`${ach()}?per_page=200&updated_after=${encodeURIComponent(pivot)}`, T());
    expect(after.map((r) => r.id)).toEqual(all.slice(61).map((r) => r.id));
    const before = await walk(`${ach()}?per_page=200&updated_before=${encodeURIComponent(pivot)}`, T());
    expect(before.map((r) => r.id)).toEqual(all.slice(0, 60).map((r) => r.id));
  });
});

describe('content', () => {
  it('embeds includes as { data: [...] } and serves the item URL as the bare object', async () => {
    const list = (await call(`${uk}/v1.0/schools/A1001/achievements?include=students,employees&per_page=5`, { token: T() })).json.data;
    expect(list[0].students.data[0]).toMatchObject({ id: expect.stringMatching(/^A\d+$/), forename: expect.any(String) });
    expect(Array.isArray(list[0].employees.data)).toBe(true);
    const item = (await call(`${uk}/v1.0/schools/A1001/achievements/${list[1].id}`, { token: T() })).json;
    const { students, employees, ...bare } = list[1];
    expect(item).toEqual(bare);
    expect(students.data.length + employees.data.length).toBeGreaterThanOrEqual(0);
  });

  it('has the awkward values real data has', async () => {
    const rows = await walk(`${uk}/v1.0/schools/A1001/achievements?per_page=200`, T());
    const comments = rows.map((r) => r.comment);
    expect(comments).toContain(null);
    expect(comments.some((c) => typeof c === 'string' && c.includes('\n'))).toBe(true);
    expect(comments.some((c) => typeof c === 'string' && c.startsWith('='))).toBe(true);
    expect(comments.some((c) => typeof c === 'string' && /[\u4e00-\u9fff]/.test(c))).toBe(true);
    expect(rows.some((r) => r.points === null)).toBe(true);
    expect(rows.some((r) => r.achievement_date === null)).toBe(true);
    expect(rows[2].achievement_date).toEqual({ date: '2024-10-27 01:30:00.000000', timezone_type: 3, timezone: 'Europe/London' });
    expect(rows[3].achievement_date.date).toBe('2024-10-27 01:30:00.000000');
    const results = (await call(`${uk}/v1.0/schools/A1001/assessment/results?per_page=200`, { token: T() })).json.data;
    expect(new Set(results.map((r: any) => r.grade_value))).toEqual(new Set(['12.50', '-0.5', '7', '0', '100.25', '3.0', '0.125']));
    const aspects = (await call(`${uk}/v1.0/schools/A1001/assessment/aspects`, { token: T() })).json.data;
    const kinds = new Set(aspects.flatMap((a: any) => [a.min_value, a.max_value]).map((v: unknown) => (v === null ? 'null' : typeof v)));
    expect(kinds).toEqual(new Set(['null', 'number', 'string']));
  });

  it('serves assessment includes, aspect_ids and result sets', async () => {
    const base = `${uk}/v1.0/schools/A1001/assessment`;
    const r = (await call(`${base}/results?per_page=1&include=student,aspect,resultset`, { token: T() })).json;
    expect(r.meta.includes).toEqual(['student', 'aspect', 'resultset']);
    expect(r.data[0].aspect.data[0].id).toBe(r.data[0].aspect.data[0].id);
    expect(r.data[0].student.data).toHaveLength(1);
    const aspects = (await call(`${base}/aspects`, { token: T() })).json.data;
    const pick = (await call(`${base}/aspects?aspect_ids=${aspects[1].id},${aspects[3].id}&include=templates,results`, { token: T() })).json
      .data;
    expect(pick.map((a: any) => a.id)).toEqual([aspects[1].id, aspects[3].id]);
    expect(pick[0].results.data.every((x: any) => x.aspect === aspects[1].id)).toBe(true);
    expect(pick[0].templates.data.length).toBe(3);
    const sets = (await call(`${base}/resultsets`, { token: T() })).json.data;
    expect((await call(`${base}/resultsets/${sets[0].id}`, { token: T() })).json).toEqual(sets[0]);
  });

  it('filters achievements by mis_id, has_students, has_employees and achievement dates', async () => {
    const base = `${uk}/v1.0/schools/A1001/achievements`;
    const all = await walk(`${base}?per_page=200&include=students,employees`, T());
    expect((await call(`${base}?mis_id=100007`, { token: T() })).json.data.map((r: any) => r.id)).toEqual([all[7].id]);
    const withStudents = await walk(`${base}?per_page=200&has_students=true`, T());
    expect(withStudents.map((r) => r.id)).toEqual(all.filter((r) => r.students.data.length > 0).map((r) => r.id));
    expect(withStudents.length).toBeLessThan(all.length);
    const withEmployees = await walk(`${base}?per_page=200&has_employees=1`, T());
    expect(withEmployees.map((r) => r.id)).toEqual(all.filter((r) => r.employees.data.length > 0).map((r) => r.id));
    const sinceOct = await walk(`${base}?per_page=200&achievement_date_after=2024-10-01`, T());
    const cut = Date.parse('2024-10-01T00:00:00Z') * 1000;
    const expected = all.filter((r) => r.achievement_date !== null && microsOfDt(r.achievement_date) > cut);
    expect(expected.length).toBeGreaterThan(0);
    expect(sinceOct.map((r) => r.id)).toEqual(expected.map((r) => r.id));
  });
});

describe('errors and access', () => {
  it('answers 404 for unknown schools, routes and items', async () => {
    for (const path of [
      '/v1.0/schools/A424242/achievements',
      '/v1.0/nothing',
      '/schools',
      '/v1.0/schools/A1001/achievements/A1',
      '/v1.0/schools/A1001/assessment/aspects/x',
    ]) {
      const r = await call(`${uk}${path}`, { token: T() });
      expect(r.status, path).toBe(404);
      expect(r.json.error).toMatchObject({ status: 404, code: 'not_found' });
    }
  });

  it('returns no data at the wrong region: empty lists, 404 items', async () => {
    const list = await call(`${apac}/v1.0/schools/A1001/achievements`, { token: T() });
    expect(list.status).toBe(200);
    expect(list.json.data).toEqual([]);
    const some = (await call(`${uk}/v1.0/schools/A1001/achievements?per_page=1`, { token: T() })).json.data[0];
    expect((await call(`${apac}/v1.0/schools/A1001/achievements/${some.id}`, { token: T() })).status).toBe(404);
    expect((await call(`${apac}/v1.0/meta/schools/A1001`, { token: T() })).status).toBe(404);
    expect((await call(`${uk}/v1.0/schools/A1002/deletions`, { token: T() })).json.data).toEqual([]);
  });

  it('gives the limited token null properties and 403 on guarded endpoints', async () => {
    const L = sb.tokens.limited;
    const rows = (await call(`${uk}/v1.0/schools/A1001/achievements?per_page=100`, { token: L })).json.data;
    expect(rows.every((r: any) => r.comment === null)).toBe(true);
    expect((await call(`${uk}/v1.0/meta/schools/A1001`, { token: L })).json.data.custom_attendance_codes).toBeNull();
    expect((await call(`${uk}/v1.0/schools/A1001/assessment/results`, { token: L })).status).toBe(403);
    expect((await call(`${uk}/v1.0/meta/schools/A1001/acl`, { token: L })).status).toBe(403);
    const del = await call(`${uk}/v1.0/schools/A1001/achievements/${rows[0].id}`, { token: L, method: 'DELETE' });
    expect(del.status).toBe(403);
    expect(del.json.error.code).toBe('forbidden');
  });

  it('answers 403 for schools without approved access and 423 for the offline one', async () => {
    expect((await call(`${uk}/v1.0/schools/A9001/achievements`, { token: T() })).status).toBe(403);
    const off = await call(`${uk}/v1.0/schools/A9005/achievements`, { token: T() });
    expect(off.status).toBe(423);
    expect(off.json.error).toMatchObject({ status: 423, code: 'school_inactive' });
    expect((await call(`${uk}/v1.0/meta/schools/A9005`, { token: T() })).json.data.online).toBe(false);
  });

  it('gzips when asked, at the same JSON', async () => {
    const plain = await call(`${uk}/v1.0/schools/A1001/achievements?per_page=100`, { token: T() });
    const gz = await call(`${uk}/v1.0/schools/A1001/achievements?per_page=100`, { token: T(), gzip: true });
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gz.raw.length).toBeLessThan(plain.raw.length);
    expect(gz.text).toBe(plain.text);
  });

  it('sends a Date header consistent with now()', async () => {
    const r = await call(`${uk}/v1.0/schools`, { token: T() });
    const header = Date.parse(String(r.headers.date));
    expect(Math.abs(sb.control.now().getTime() - header)).toBeLessThan(5000);
  });
});
