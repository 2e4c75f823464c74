/**
 * Hand-written records shaped per spec section 2, covering what the flattener must get right:
 * DST edges (Europe/London, Australia/Sydney), Africa/Johannesburg and UTC, nulls, string and
 * integer forms of establishment_number / la_code, unicode (CJK, emoji, combining marks),
 * CSV-hostile text and undeclared fields.
 */
import type { FlattenContext } from '../../src/flatten/index.ts';

export const CTX: FlattenContext = {
  schoolId: 'A1930499544',
  region: 'uk',
  runId: '20261122T011558Z-3f9a',
  extractedAt: '2026-11-22T01:15:58.123Z',
};

const dt = (date: string, timezone: string) => ({ date, timezone_type: 3, timezone });

export const FIXTURES: Record<string, unknown[]> = {
  schools: [
    {
      id: 'A1930499544',
      name: 'Ysgol Gymraeg "Bro Taf", Pontypridd',
      establishment_number: 4021,
      urn: 401234,
      phase_of_education: 'PRIMARY',
      la_code: '674',
      timezone: 'Europe/London',
      mis: 'SIMS',
      address: {
        address_line_1: '1 Heol-y-Felin',
        address_line_2: null,
        address_town: 'Pontypridd',
        address_postcode: 'CF37 1AA',
        address_country: { code: 'GBR', name: 'United Kingdom', iso_3166_2: 'GB-WLS' },
      },
      extended: { allows_writeback: true, has_timetables: false, has_lesson_attendance: true },
      region: {
        code: 'uk',
        domain: 'api.example.test',
        school_url: 'https://api.example.test/v1.0/schools/A1930499544',
        identifiers: { la_code: 674, establishment_number: '4021', urn: 401234 },
      },
    },
    {
      id: 'A500460806',
      name: '悉尼国际学校 🦘 Sydney',
      establishment_number: '00012',
      urn: 12,
      phase_of_education: 'NOT APPLICABLE',
      la_code: 'NSW-01',
      timezone: 'Australia/Sydney',
      mis: null,
      address: {
        address_line_1: '=HYPERLINK("http://evil.test","click")',
        address_line_2: 'Line with\nnewline, comma',
        address_town: 'Sydney',
        address_postcode: '2000',
        // no iso_3166_2: optional in the spec
        address_country: { code: 'AUS', name: 'Australia' },
      },
      extended: { allows_writeback: false, has_timetables: true, has_lesson_attendance: false },
      region: {
        code: 'apac',
        domain: 'apac.example.test',
        school_url: 'https://apac.example.test/x',
        identifiers: { la_code: null, establishment_number: null, urn: null },
      },
      // undeclared: a new top-level field, a new nested one, a new datetime
      website: 'https://school.example.au',
      extended_new: undefined,
      opened_at: dt('1999-01-25 09:00:00.000000', 'Australia/Sydney'),
    },
  ],
  school_meta: [{ online: true, approved: true, audited: false, custom_attendance_codes: null }],
  school_permissions: [
    {
      identity: 'achievements.read',
      name: 'Read achievements',
      description: 'Allows reading "achievements", points & comments',
      parent: null,
      group: 'Behaviour',
      active_from: dt('2024-03-31 01:30:00.000000', 'Europe/London'), // spring-forward gap
      optional: false,
      approved: true,
      audited: true,
    },
    {
      identity: 'students.read',
      name: 'Read students',
      description: '',
      parent: 'students',
      group: 'Core',
      active_from: null,
      optional: true,
      approved: false,
      audited: false,
    },
  ],
  school_acl: [
    {
      mode: 'whitelist',
      ids: [
        { id: 'A11', type: 'student' },
        { id: 'A12', type: 'contact' },
      ],
    },
  ],
  achievements: [
    {
      id: 'A1001',
      mis_id: '55011',
      type: 'Merit',
      action: 'Certificate',
      subject: 'Maths',
      class: '7A/Ma1',
      points: 3,
      total_points: 12,
      comment: 'Helped a classmate, "really" well\r\nand tidied up, 100%',
      parents_notified: true,
      achievement_date: dt('2024-10-27 01:30:00.000000', 'Europe/London'), // fold: the first (BST) instant
      action_date: dt('2024-10-27 00:59:59.999999', 'Europe/London'),
      recorded_date: dt('2024-10-27 02:00:00.000000', 'Europe/London'),
      created_at: dt('2024-10-27 09:15:02.123456', 'UTC'),
      updated_at: dt('2024-10-28 10:00:00.000001', 'UTC'),
      students: {
        data: [
          { id: 'A2001', forename: 'Zoë', surname: 'Ó Briain', date_of_birth: dt('2013-05-04 00:00:00.000000', 'Europe/London') },
          { id: 'A2002', forename: '翔太', surname: 'Sato' },
        ],
      },
      employees: { data: [{ id: 'A3001', title: 'Ms', surname: 'Jones' }] },
    },
    {
      id: 'A1002',
      mis_id: '55012',
      type: null,
      action: null,
      subject: null,
      class: null,
      points: null,
      total_points: 'lots', // declared integer: column null, value kept as total_points__raw
      comment: '-1 point for 🙈 behaviour; @staff to follow up',
      parents_notified: null,
      achievement_date: dt('2024-04-07 02:30:00.000000', 'Australia/Sydney'), // fold in Sydney
      action_date: dt('2024-10-06 02:30:00.000000', 'Australia/Sydney'), // gap in Sydney
      recorded_date: null,
      created_at: dt('2024-07-01 12:00:00.500000', 'Africa/Johannesburg'),
      updated_at: dt('2024-07-01 12:00:00.500000', 'Africa/Johannesburg'),
      students: { data: [] },
      employees: { data: [] },
      // undeclared: drift kept, and a declared integer that arrives as text it cannot be
      house: 'Dewi',
      points_breakdown: [1, 2],
    },
  ],
  achievement_attributes: [
    {
      id: 'A4001',
      mis_id: '7',
      type: 'ACHIEVEMENT_TYPE',
      code: 'MER',
      active: true,
      points: 1,
      description: 'Merit',
      bullying_type_enabled: false,
      created_at: dt('2023-09-01 08:00:00.000000', 'Europe/London'),
      updated_at: dt('2023-12-01 08:00:00.000000', 'Europe/London'),
    },
    {
      id: 'A4002',
      mis_id: '8',
      type: 'ACHIEVEMENT_OUTCOME',
      code: '+CERT',
      active: false,
      points: null,
      description: '+Certificate, sent home',
      bullying_type_enabled: false,
      created_at: dt('2023-09-01 08:00:00.000000', 'UTC'),
      updated_at: dt('2023-09-01 08:00:00.000000', 'UTC'),
    },
  ],
  assessment_aspects: [
    {
      id: 'A5001',
      mis_id: 9001,
      name: 'Reading age',
      type: 'MARK',
      description: 'Années — lecture',
      min_value: 0,
      max_value: '16.5',
      created_at: dt('2024-01-15 10:00:00.000000', 'Europe/London'),
      updated_at: dt('2024-01-15 10:00:00.000000', 'Europe/London'),
    },
    {
      id: 'A5002',
      mis_id: 9002,
      name: 'Effort',
      type: 'GRADE',
      description: null,
      min_value: null,
      max_value: true,
      created_at: dt('2024-01-15 10:00:00.000000', 'UTC'),
      updated_at: dt('2024-01-15 10:00:00.000000', 'UTC'),
    },
  ],
  assessment_results: [
    {
      id: 'A6001',
      mis_id: 123456789,
      result: 'A*',
      grade_value: '12.50',
      student: 'A2001',
      aspect: 'A5001',
      resultset: 'A7001',
      collection_date: dt('2025-03-30 01:00:00.000000', 'Europe/London'), // gap: 01:00 -> 02:00
      result_date: dt('2025-03-30 00:59:59.999999', 'Europe/London'),
      created_at: dt('2025-03-30 12:00:00.000000', 'UTC'),
      updated_at: dt('2025-03-30 12:00:00.000000', 'UTC'),
    },
    {
      id: 'A6002',
      mis_id: '123456790',
      result: '=1+1',
      grade_value: 7,
      student: 'A2002',
      aspect: 'A5002',
      resultset: 'A7001',
      collection_date: null,
      result_date: null,
      created_at: dt('2025-03-30 12:00:00.000000', 'UTC'),
      updated_at: dt('2025-03-30 12:00:00.000000', 'UTC'),
    },
  ],
  assessment_resultsets: [
    {
      id: 'A7001',
      mis_id: 77,
      name: 'Autumn 2024',
      module: 'Assessment',
      source: 'MIS',
      supplier: null,
      external_id: 'ext-77',
      locked: true,
      start_date: dt('2024-09-01 00:00:00.000000', 'Africa/Johannesburg'),
      end_date: dt('2024-12-20 23:59:59.000000', 'Africa/Johannesburg'),
      created_at: dt('2024-09-01 00:00:00.000000', 'UTC'),
      updated_at: dt('2024-09-01 00:00:00.000000', 'UTC'),
    },
  ],
  deletions: [
    { type: 'achievement', id: 'A1003', mis_id: '55013', deleted_at: dt('2024-11-01 10:00:00.000000', 'Europe/London') },
    {
      type: 'student',
      id: 'A2003',
      mis_id: '9',
      deleted_at: dt('2024-11-01 10:00:00.000000', 'Europe/London'),
      restored_at: dt('2024-11-02 10:00:00.000000', 'Europe/London'),
    },
    { type: 'lesson', id: 'A8001', mis_id: 'L1', deleted_at: dt('2024-11-01 10:00:00.000000', 'UTC') },
  ],
};
