import { describe, expect, it } from 'vitest';
import { buildListQuery, LIST_NAMES, listsTaking } from '../../src/discovery/lists.ts';
import { buildContacts, isValidEmail, parseContact } from '../../src/discovery/contacts.ts';
import {
  displayWidth,
  fit,
  groupPermissions,
  renderDetails,
  schoolSummary,
  summarizeAcl,
  tableHeader,
  tableRow,
  terminalSafe,
} from '../../src/discovery/render.ts';

describe('school list filters', () => {
  it('passes supported filters and refuses the others naming the lists that take them', () => {
    expect(buildListQuery('approved', { postcode: ' SW1A ', iso_3166_2: 'gb-eng,GB-WLS', updated_after: '2024-09-01 08:00:00' })).toEqual({
      postcode: 'SW1A',
      iso_3166_2: 'GB-ENG,GB-WLS',
      updated_after: '2024-09-01 08:00:00',
    });
    expect(buildListQuery('all', { urn: '100001', la_code: '201' })).toEqual({ urn: '100001', la_code: '201' });
    expect(() => buildListQuery('approved', { urn: '1' })).toThrow(
      /--urn is not supported by the approved list; it is taken by --state all$/,
    );
    expect(() => buildListQuery('revoked', { postcode: 'x' })).toThrow(/taken by --state approved, all, pending, audited, offline$/);
    expect(() => buildListQuery('pending', { iso_3166_2: 'GB' })).toThrow(/taken by --state approved$/);
    expect(listsTaking('updated_after')).toEqual(['approved', 'all', 'pending', 'audited', 'offline']);
    for (const l of LIST_NAMES) expect(buildListQuery(l, {})).toEqual({});
  });

  it('checks values', () => {
    expect(() => buildListQuery('all', { urn: '12a' })).toThrow(/integer/);
    expect(() => buildListQuery('all', { updated_after: 'yesterday' })).toThrow(/expected a date/);
    expect(() => buildListQuery('approved', { iso_3166_2: 'England' })).toThrow(/ISO 3166/);
    expect(() => buildListQuery('all', { updated_after: '2024-02-01', updated_before: '2024-01-01' })).toThrow(/later than/);
    expect(() => buildListQuery('all', { postcode: '  ' })).toThrow(/empty/);
    try {
      buildListQuery('all', { urn: 'x' });
    } catch (e) {
      expect((e as { code: string }).code).toBe('E_USAGE');
    }
  });
});

describe('access-request contacts', () => {
  it('parses names and emails', () => {
    expect(parseContact('Ada Lovelace <ada@example.org>')).toEqual({
      first_name: 'Ada',
      last_name: 'Lovelace',
      email_address: 'ada@example.org',
    });
    expect(parseContact('Mary van der Berg <m.vdb@school.example.co.uk>')).toMatchObject({ first_name: 'Mary', last_name: 'van der Berg' });
    expect(parseContact('Smith, Mary Ann <mas@example.org>')).toMatchObject({ first_name: 'Mary Ann', last_name: 'Smith' });
    expect(parseContact('Zoë Ñúñez <z@example.org>')).toMatchObject({ first_name: 'Zoë', last_name: 'Ñúñez' });
  });

  it('refuses what the school could not use', () => {
    expect(() => parseContact('Ada <ada@example.org>')).toThrow(/last name missing/);
    expect(() => parseContact('<ada@example.org>')).toThrow(/first name missing/);
    expect(() => parseContact('Ada Lovelace ada@example.org')).toThrow(/no <email>/);
    for (const bad of [
      'ada@',
      'ada@example',
      'a da@example.org',
      'ada@@example.org',
      'ada@example..org',
      '.ada@example.org',
      'ada@-x.org',
    ]) {
      expect(isValidEmail(bad), bad).toBe(false);
      expect(() => parseContact(`Ada Lovelace <${bad}>`)).toThrow(/not a valid email/);
    }
  });

  it('pairs phones and notes by position', () => {
    const cs = buildContacts(['A One <a@example.org>', 'B Two <b@example.org>'], ['', '+44 20 7946 0000'], ['head teacher']);
    expect(cs).toEqual([
      { first_name: 'A', last_name: 'One', email_address: 'a@example.org', notes: 'head teacher' },
      { first_name: 'B', last_name: 'Two', email_address: 'b@example.org', phone_number: '+44 20 7946 0000' },
    ]);
    expect(() => buildContacts(['A One <a@example.org>'], ['1', '2'])).toThrow(/2 --phone values for 1 --contact/);
    expect(() => buildContacts(['A One <a@example.org>'], ['call me'])).toThrow(/--phone/);
    expect(() => buildContacts([], [], ['x'])).toThrow(/--notes/);
  });
});

describe('rendering', () => {
  const school = {
    id: 'A1',
    name: '東京 School 🎒 "North", =SUM(1)\u001b[31m',
    la_code: 201,
    establishment_number: '3001',
    urn: 100001,
    region: { code: 'uk', domain: 'api.sandbox.test' },
  };

  it('projects a school and prints fixed-width rows with terminal-safe text', () => {
    expect(schoolSummary(school)).toMatchObject({ id: 'A1', la_code: '201', urn: '100001', region: 'uk', domain: 'api.sandbox.test' });
    const row = tableRow(schoolSummary(school));
    expect(row).not.toContain('\u001b');
    expect(row.startsWith('A1' + ' '.repeat(12))).toBe(true);
    // wide characters and emoji are counted as two columns, so the next column lines up
    expect(displayWidth(row.slice(0, row.indexOf('  201 ') + 2))).toBe(12 + 2 + 36 + 2);
    expect(tableHeader()).toMatch(/^ID\s+NAME\s+LA\s+EST\s+URN\s+REGION\s+DOMAIN$/);
    expect(displayWidth(fit('東京東京東京', 7))).toBe(7);
    expect(fit('abcdefgh', 5)).toBe('abcd…');
    expect(terminalSafe('a\u202Eb\nc')).toBe('a\uFFFDb c');
  });

  it('groups permissions, counts ACL ids without printing them, renders details', () => {
    const perms = groupPermissions([
      { identity: 'students.read', name: 'Students', group: 'People', optional: false, approved: true, audited: true },
      { identity: 'achievements.read', name: 'Achievements', group: 'Behaviour', optional: true, approved: false, audited: false },
      { identity: 'contacts.read', name: 'Contacts', group: 'People', optional: false, approved: true, audited: false },
    ]);
    expect(Object.keys(perms)).toEqual(['Behaviour', 'People']);
    expect(perms.People!.map((p) => p.identity)).toEqual(['contacts.read', 'students.read']);
    const acl = summarizeAcl(
      {
        mode: 'whitelist',
        ids: [
          { id: 'A9', type: 'student' },
          { id: 'A8', type: 'contact' },
          { id: 'A7', type: 'student' },
        ],
      },
      true,
    );
    expect(acl).toEqual({ mode: 'whitelist', count: 3, types: { student: 2, contact: 1 } });
    expect(summarizeAcl({ mode: null, ids: [] }, false)).toEqual({ mode: null, count: 0 });
    const text = renderDetails({
      school,
      meta: { online: true, approved: true, audited: false, custom_attendance_codes: null },
      permissions: perms,
      acl,
    });
    expect(text).toContain('approved yes');
    expect(text).toContain('custom attendance codes unknown (no scope)');
    expect(text).toMatch(/People\n {4}contacts\.read/);
    expect(text).toContain('mode whitelist   ids 3   student 2, contact 1');
    expect(text).not.toContain('A9');
    expect(text).not.toContain('\u001b');
  });
});
