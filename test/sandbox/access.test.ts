import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { call } from './helpers.ts';

let sb: Sandbox;
beforeEach(async () => {
  sb = await startSandbox();
});
afterEach(() => sb.close());

const get = (path: string, token = sb.tokens.full, base = sb.url) => call(`${base}/v1.0${path}`, { token });
const identities = async (token: string) =>
  ((await get('/meta/schools/A1001/permissions', token)).json.data as any[]).map((p) => p.identity);

describe('property scopes', () => {
  it('the limited token lacks achievements.parents_notified.read and reads parents_notified as null', async () => {
    const full = (await get('/schools/A1001/achievements?per_page=120')).json.data;
    const limited = (await get('/schools/A1001/achievements?per_page=120', sb.tokens.limited)).json.data;
    expect(full.some((r: any) => r.parents_notified !== null)).toBe(true);
    expect(limited.every((r: any) => r.parents_notified === null && r.comment === null)).toBe(true);
    const one = (await get(`/schools/A1001/achievements/${full[1].id}`, sb.tokens.limited)).json;
    expect(one).toMatchObject({ comment: null, parents_notified: null });
    expect(await identities(sb.tokens.full)).toContain('achievements.parents_notified.read');
    expect(await identities(sb.tokens.limited)).not.toContain('achievements.parents_notified.read');
  });

  it('follows one convention: a property permission <resource>.<property>.read the token lacks means that property is null', async () => {
    const full = new Set(await identities(sb.tokens.full));
    const limited = new Set(await identities(sb.tokens.limited));
    const missing = [...full].filter((p) => !limited.has(p) && /^[a-z_]+\.[a-z_]+\.read$/.test(p));
    expect(missing.sort()).toEqual([
      'achievements.comment.read',
      'achievements.parents_notified.read',
      'school_meta.custom_attendance_codes.read',
      'schools.mis.read',
    ]);
    // Where each resource's objects are read, for the two tokens.
    const objects = async (resource: string, token: string): Promise<any[]> => {
      if (resource === 'schools') return (await get('/schools', token)).json.data;
      if (resource === 'school_meta') return [(await get('/meta/schools/A1002', token, sb.domains['api-apac.sandbox.test'])).json.data];
      return (await get(`/schools/A1001/${resource}?per_page=120`, token)).json.data;
    };
    for (const identity of missing) {
      const [resource, property] = identity.split('.') as [string, string];
      const withScope = await objects(resource, sb.tokens.full);
      const without = await objects(resource, sb.tokens.limited);
      expect(
        withScope.some((o) => o[property] !== null),
        identity,
      ).toBe(true);
      expect(
        without.every((o) => property in o && o[property] === null),
        identity,
      ).toBe(true);
    }
  });

  it('lists property permissions under their object permission, approved for an approved school', async () => {
    const perms = (await get('/meta/schools/A1001/permissions')).json.data as any[];
    expect(perms.find((p) => p.identity === 'achievements.parents_notified.read')).toMatchObject({
      parent: 'achievements.read',
      optional: true,
      approved: true,
    });
  });
});

describe('property permission naming', () => {
  const NAMES = {
    dotted: [
      'achievements.comment.read',
      'achievements.parents_notified.read',
      'school_meta.custom_attendance_codes.read',
      'schools.mis.read',
    ],
    underscore: [
      'achievement_comment.read',
      'achievement_parents_notified.read',
      'school_meta_custom_attendance_codes.read',
      'school_mis.read',
    ],
    singular: [
      'achievement.comment.read',
      'achievement.parents_notified.read',
      'school.mis.read',
      'school_meta.custom_attendance_codes.read',
    ],
    kebab: [
      'achievements-comment.read',
      'achievements-parents-notified.read',
      'school_meta-custom-attendance-codes.read',
      'schools-mis.read',
    ],
    upper: [
      'ACHIEVEMENTS.COMMENT.READ',
      'ACHIEVEMENTS.PARENTS_NOTIFIED.READ',
      'SCHOOL_META.CUSTOM_ATTENDANCE_CODES.READ',
      'SCHOOLS.MIS.READ',
    ],
    opaque: ['ach_note_3.read', 'ach_note_4.read', 'sch_note_1.read', 'sch_note_2.read'],
  } as const;

  it.each(Object.keys(NAMES) as (keyof typeof NAMES)[])(
    '%s: the full token lists the property permissions so named, the limited token lacks them and reads the properties as null',
    async (naming) => {
      const other = await startSandbox({ schools: 1, achievementsPerSchool: 30, propertyPermissionNaming: naming });
      try {
        const ids = async (token: string) =>
          ((await call(`${other.url}/v1.0/meta/schools/A1001/permissions`, { token })).json.data as any[]).map((p) => p.identity as string);
        const full = await ids(other.tokens.full);
        const limited = new Set(await ids(other.tokens.limited));
        expect(
          full.filter((p) => !limited.has(p) && !/^(achievements\.delete|assessment_results\.read|acl\.read)$/.test(p)).sort(),
        ).toEqual([...NAMES[naming]].sort());
        // The object permissions keep their names whatever the naming of property permissions.
        expect(full).toEqual(expect.arrayContaining(['schools.read', 'achievements.read']));
        const rows = (await call(`${other.url}/v1.0/schools/A1001/achievements?per_page=50`, { token: other.tokens.limited })).json.data;
        expect(rows.every((r: any) => r.comment === null && r.parents_notified === null)).toBe(true);
      } finally {
        await other.close();
      }
    },
  );

  it('refuses an unknown naming', async () => {
    await expect(startSandbox({ propertyPermissionNaming: 'camel' as never })).rejects.toThrow(
      /propertyPermissionNaming must be one of dotted, underscore/,
    );
  });
});

describe('setInactive', () => {
  it('makes every path of the school answer 423 school_inactive, keeps it listed, and can be undone', async () => {
    sb.control.setInactive('A1004', true);
    for (const path of [
      '/schools/A1004/achievements',
      '/schools/A1004/deletions',
      '/schools/A1004/assessment/aspects',
      '/schools/A1004/achievements/attributes',
      '/meta/schools/A1004',
      '/meta/schools/A1004/permissions',
      '/meta/schools/A1004/acl',
    ]) {
      const r = await get(path);
      expect(r.status, path).toBe(423);
      expect(r.json.error, path).toMatchObject({ status: 423, code: 'school_inactive' });
    }
    expect((await call(`${sb.url}/v1.0/schools/A1004/request-access`, { method: 'POST', token: sb.tokens.full })).status).toBe(423);
    expect((await get('/schools')).json.data.map((s: any) => s.id)).toContain('A1004');
    expect((await get('/schools/A1004')).status).toBe(200); // discovery still finds it (and its domain)
    expect((await get('/schools/A1001/achievements')).status).toBe(200);
    sb.control.setInactive('A1004', false);
    expect((await get('/schools/A1004/achievements')).status).toBe(200);
  });

  it('is reachable over HTTP and refuses a non-boolean', async () => {
    const base = `${sb.url}/_control/schools/A1004/inactive`;
    expect((await call(base, { method: 'PUT', token: sb.tokens.full, body: { inactive: true } })).status).toBe(200);
    expect((await get('/schools/A1004/achievements')).status).toBe(423);
    expect((await call(base, { method: 'PUT', token: sb.tokens.full, body: { inactive: 'yes' } })).status).toBe(400);
  });
});

describe('revoked and declined schools', () => {
  it('are listed by /schools/revoked and /schools/declined, leave /schools, and answer 403 on data paths', async () => {
    await sb.control.setAccess('A1001', 'revoked');
    await sb.control.setAccess('A1004', 'declined');
    const ids = async (list: string) => (await get(list)).json.data.map((s: any) => s.id);
    expect(await ids('/schools/revoked')).toEqual(['A1001', 'A9003']);
    expect(await ids('/schools/declined')).toEqual(['A1004', 'A9004']);
    expect(await ids('/schools')).not.toContain('A1001');
    for (const path of ['/schools/A1001/achievements', '/schools/A1001/deletions', '/schools/A1001/assessment/resultsets']) {
      const r = await get(path);
      expect(r.status, path).toBe(403);
      expect(r.json.error.code).toBe('access_not_approved');
    }
    expect((await get('/schools/A1004/achievements')).status).toBe(403);
    // The access-management call of the application moves a school there too.
    await call(`${sb.domains['api-apac.sandbox.test']}/v1.0/schools/A1002/revoke-access`, { method: 'DELETE', token: sb.tokens.full });
    expect(await ids('/schools/revoked')).toEqual(['A1001', 'A1002', 'A9003']);
  });
});
