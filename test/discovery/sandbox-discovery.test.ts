import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import yargs from 'yargs';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { ApiClient } from '../../src/source/client.ts';
import { listSchools, showSchool } from '../../src/discovery/service.ts';
import type { SchoolListName } from '../../src/discovery/lists.ts';
import { schoolsCommand, schoolsList, schoolsShow } from '../../src/cli/schools.ts';
import { accessCommand, accessRequest, accessRevoke } from '../../src/cli/access.ts';

/**
 * Discovery and access against the sandbox. Its fixed cast (docs/sandbox.md): approved schools
 * A1001..A1006 (odd ones audited) over uk/apac/africa in turn; A9001 pending (uk), A9002 pending
 * (apac), A9003 revoked (uk), A9004 declined (africa), A9005 offline (uk).
 */
let sb: Sandbox;
const client = (token = sb.tokens.full, domains = sb.domains) =>
  new ApiClient({ apiUrl: sb.url, token, domains, retry: { maxAttempts: 1 } });

beforeAll(async () => {
  sb = await startSandbox({ achievementsPerSchool: 3 });
});
afterAll(async () => {
  await sb?.close();
});
beforeEach(() => sb.control.clearRequests());

async function ids(list: SchoolListName, filters = {}, perPage = 100): Promise<string[]> {
  const c = client();
  try {
    const out: string[] = [];
    for await (const s of listSchools(c, list, filters, perPage)) out.push((s as { id: string }).id);
    return out;
  } finally {
    await c.close();
  }
}

function io() {
  const out = new PassThrough();
  const err = new PassThrough();
  let o = '';
  let e = '';
  out.on('data', (c) => (o += c));
  err.on('data', (c) => (e += c));
  return { io: { out, err }, text: () => o, errText: () => e };
}

const apiArgs = () => ({ 'api-url': sb.url, domain: Object.entries(sb.domains).map(([d, u]) => `${d}=${u}`) });

describe('schools list against the sandbox', () => {
  it('each list holds the schools in that state, every page walked', async () => {
    expect(await ids('approved')).toEqual(['A1001', 'A1002', 'A1003', 'A1004', 'A1005', 'A1006']);
    expect(await ids('audited')).toEqual(['A1001', 'A1003', 'A1005']);
    expect(await ids('pending')).toEqual(['A9001', 'A9002']);
    expect(await ids('revoked')).toEqual(['A9003']);
    expect(await ids('declined')).toEqual(['A9004']);
    expect(await ids('offline')).toEqual(['A9005']);
    const all = await ids('all');
    expect(all).toHaveLength(11);
    // two rows per page: the same schools, over several requests following next URLs
    sb.control.clearRequests();
    expect(await ids('all', {}, 2)).toEqual(all);
    expect(sb.control.requests().filter((r) => r.path.startsWith('/v1.0/schools/all'))).toHaveLength(6);
    expect(sb.control.requests().every((r) => r.region === 'uk')).toBe(true); // lists come from the discovery domain
  });

  it('filters reach the service and narrow the list', async () => {
    const c = client();
    const schools: any[] = [];
    for await (const s of listSchools(c, 'all')) schools.push(s);
    await c.close();
    const target = schools.find((s) => s.id === 'A1004');

    expect(await ids('all', { urn: String(target.urn) })).toEqual(['A1004']);
    expect(await ids('all', { postcode: target.address.address_postcode })).toContain('A1004');
    const byLa = await ids('approved', { la_code: String(target.la_code) });
    expect(byLa).toEqual(schools.filter((s) => String(s.la_code) === String(target.la_code) && s.id < 'A9').map((s) => s.id));
    expect(await ids('pending', { establishment_number: String(schools.find((s) => s.id === 'A9002').establishment_number) })).toEqual([
      'A9002',
    ]);
    expect(await ids('approved', { iso_3166_2: 'AU' })).toEqual(['A1002', 'A1005']);
    expect(await ids('approved', { updated_after: '2999-01-01' })).toEqual([]);
    expect(await ids('audited', { updated_before: '2999-01-01 00:00:00' })).toEqual(['A1001', 'A1003', 'A1005']);
    const sent = sb.control.requests().map((r) => decodeURIComponent(r.path));
    expect(sent.some((p) => p.startsWith('/v1.0/schools/all?') && p.includes(`urn=${target.urn}`))).toBe(true);
    expect(sent.some((p) => p.startsWith('/v1.0/schools?') && p.includes('iso_3166_2=AU'))).toBe(true);
  });

  it('an unsupported filter is refused before any request', async () => {
    await expect(ids('revoked', { postcode: 'LS1' })).rejects.toMatchObject({ code: 'E_USAGE' });
    await expect(ids('approved', { urn: '1' })).rejects.toThrow(/taken by --state all/);
    expect(sb.control.requests()).toEqual([]);
  });

  it('the CLI maps --kebab-case filters and prints NDJSON or a table', async () => {
    vi.stubEnv('SCHOOL_API_TOKEN', sb.tokens.full);
    const writes: string[] = [];
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((c: any) => (writes.push(String(c)), true));
    try {
      await yargs()
        .command(schoolsCommand)
        .strict()
        .parseAsync([
          'schools',
          'list',
          '--state',
          'pending',
          '--establishment-number',
          'nope',
          '--json',
          ...apiArgs().domain.flatMap((d) => ['--domain', d]),
          '--api-url',
          sb.url,
        ]);
    } finally {
      spy.mockRestore();
    }
    expect(writes.join('')).toBe('');
    expect(
      sb.control
        .requests()
        .map((r) => decodeURIComponent(r.path))
        .join(),
    ).toContain('establishment_number=nope');

    vi.stubEnv('SCHOOL_API_TOKEN', sb.tokens.full);
    const t = io();
    expect(
      await schoolsList({ ...apiArgs(), state: 'approved', json: false }, { ...t.io, out: Object.assign(t.io.out, { isTTY: true }) }),
    ).toBe(6);
    const j = io();
    await schoolsList({ ...apiArgs(), state: 'declined', json: true }, j.io);
    expect(
      j
        .text()
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).id),
    ).toEqual(['A9004']);
    const lines = t.text().trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID\s+NAME/);
    expect(lines).toHaveLength(7);
    expect(lines[2]).toMatch(/^A1002\s.*\sapac\s+api-apac\.sandbox\.test$/);
    expect(t.errText()).toBe('6 approved schools\n');
  });
});

describe('schools show against the sandbox', () => {
  it('meta, permissions by group and ACL come from the regional domain', async () => {
    const c = client();
    const d = await showSchool(c, 'A1002', { withUserType: true });
    await c.close();
    expect((d.school as any).id).toBe('A1002');
    expect(d.meta).toEqual({ online: true, approved: true, audited: false, custom_attendance_codes: true });
    expect(Object.keys(d.permissions)).toEqual(['Achievements', 'Assessment', 'School']);
    expect(d.permissions.School!.map((p) => p.identity)).toEqual([
      'acl.read',
      'school_meta.custom_attendance_codes.read',
      'schools.mis.read',
      'schools.read',
    ]);
    expect(d.acl).toEqual({ mode: 'blacklist', count: 3, types: { student: 2, contact: 1 } });
    const reqs = sb.control.requests();
    expect(reqs.filter((r) => r.path.startsWith('/v1.0/meta/')).every((r) => r.region === 'apac')).toBe(true);
    expect(reqs.some((r) => r.path.includes('/acl?with_user_type=true'))).toBe(true);
  });

  it('a limited token shows what it may see; the ACL is "not available"', async () => {
    const c = client(sb.tokens.limited);
    const d = await showSchool(c, 'A1001');
    await c.close();
    expect(d.meta?.custom_attendance_codes).toBeNull();
    expect(d.acl).toBeNull();
    expect(d.notes).toEqual(['acl: not available to this token (403)']);
  });

  it('an unconfigured regional domain is refused with nothing sent there', async () => {
    const c = client(sb.tokens.full, { 'api.sandbox.test': sb.url });
    await expect(showSchool(c, 'A1003')).rejects.toMatchObject({ code: 'E_DOMAIN_NOT_ALLOWED' });
    await c.close();
    expect(sb.control.requests().every((r) => r.region === 'uk')).toBe(true);
    expect(sb.control.requests().some((r) => r.path.includes('/meta/'))).toBe(false);
  });

  it('renders the report on a terminal', async () => {
    const t = io();
    vi.stubEnv('SCHOOL_API_TOKEN', sb.tokens.full);
    await schoolsShow(
      { ...apiArgs(), id: 'A1001', json: false, 'with-user-type': true },
      { ...t.io, out: Object.assign(t.io.out, { isTTY: true }) },
    );
    expect(t.text()).toMatch(/^A1001 {2}St Mary's/);
    expect(t.text()).toContain('acl\n  mode whitelist   ids 3   student 2, contact 1');
  });
});

describe('access request and revoke against the sandbox', () => {
  const withToken = async <T>(fn: () => Promise<T>) => {
    vi.stubEnv('SCHOOL_API_TOKEN', sb.tokens.full);
    return await fn();
  };

  it('request moves a declined school to pending, at its regional domain, with the contacts sent', async () => {
    const t = io();
    const r = await withToken(() =>
      accessRequest(
        {
          ...apiArgs(),
          id: 'A9004',
          contact: ['Ada Lovelace <ada@example.org>', 'Smith, Mary Ann <office@example.org>'],
          phone: ['+44 20 7946 0000'],
          json: true,
        },
        t.io,
      ),
    );
    expect(r).toMatchObject({ school_id: 'A9004', success: true, state: 'pending' });
    expect(JSON.parse(t.text())).toEqual(r);
    const post = sb.control.requests().find((q) => q.method === 'POST')!;
    expect(post).toMatchObject({ path: '/v1.0/schools/A9004/request-access', region: 'africa', status: 200 });
    expect(await ids('pending')).toContain('A9004');
    expect(await ids('declined')).toEqual([]);
  });

  it('revoke with --yes moves an approved school to revoked', async () => {
    const t = io();
    const r = await withToken(() =>
      accessRevoke({ ...apiArgs(), id: 'A1006', yes: true, json: false }, { ...t.io, out: Object.assign(t.io.out, { isTTY: true }) }),
    );
    expect(r.state).toBe('revoked');
    expect(t.text()).toMatch(/^A1006: ok, state revoked — /);
    expect(await ids('revoked')).toContain('A1006');
    expect(await ids('approved')).not.toContain('A1006');
  });

  it('revoke asks on a terminal and does nothing when refused; without a terminal it needs --yes', async () => {
    const questions: string[] = [];
    const t = io();
    await expect(
      withToken(() => accessRevoke({ ...apiArgs(), id: 'A1005' }, { ...t.io, confirm: async (q) => (questions.push(q), false) })),
    ).rejects.toThrow(/not revoked/);
    expect(questions[0]).toMatch(/A1005/);
    await expect(withToken(() => accessRevoke({ ...apiArgs(), id: 'A1005' }, t.io))).rejects.toThrow(/pass --yes/);
    expect(sb.control.requests()).toEqual([]);
    const r = await withToken(() => accessRevoke({ ...apiArgs(), id: 'A1005', json: true }, { ...t.io, confirm: async () => true }));
    expect(r.state).toBe('revoked');
  });

  it('invalid contacts are refused with nothing sent', async () => {
    const bad: [string[], string[], RegExp][] = [
      [['Ada <ada@example.org>'], [], /last name missing/],
      [['Ada Lovelace <ada@example>'], [], /not a valid email/],
      [['Ada Lovelace'], [], /no <email>/],
      [['Ada Lovelace <ada@example.org>'], ['1', '2'], /--phone/],
    ];
    for (const [contact, phone, re] of bad) {
      await expect(withToken(() => accessRequest({ ...apiArgs(), id: 'A9001', contact, phone }, io().io))).rejects.toThrow(re);
    }
    // through yargs as well: the usage error surfaces and nothing reaches the service
    await expect(
      withToken(() =>
        yargs()
          .command(accessCommand)
          .strict()
          .fail(false)
          .parseAsync(['access', 'request', 'A9001', '--contact', 'Ada Lovelace <ada@@example.org>', '--api-url', sb.url]),
      ),
    ).rejects.toMatchObject({ code: 'E_USAGE' });
    expect(sb.control.requests()).toEqual([]);
  });
});
