import { describe, expect, it } from 'vitest';
import { validateEvent, redactEvent } from '../../src/webhooks/events.ts';
import { canonicalJson, eventId } from '../../src/webhooks/event-log.ts';
import { purgeRunId, selectSchoolPaths } from '../../src/webhooks/purge.ts';

const ident = { school_name: 'S', school_la_code: '201', school_urn: '1', school_establishment_number: '3001' };

describe('validateEvent', () => {
  it('accepts every payload type and keeps only declared fields', () => {
    const r = validateEvent({ payload_type: 'accessDeclined', school_id: 'A12', ...ident, decline_reason: 'no', extra: { deep: 1 } });
    expect(r).toEqual({ ok: true, event: { payload_type: 'accessDeclined', school_id: 'A12', ...ident, decline_reason: 'no' } });
    expect(validateEvent({ payload_type: 'writeback', writeback_id: 'w', status: 'SUCCESS', type: 'attendance.session' }).ok).toBe(true);
    expect(
      validateEvent({
        payload_type: 'schoolMigration',
        school_id: 'A1',
        school_name: 's',
        migrate_from: 'a',
        migrate_to: 'b',
        scheduled_at: '2026-11-20 09:00:00',
        completed_at: null,
      }).ok,
    ).toBe(true);
  });

  it('reads integer identifiers as text and a null token as absent', () => {
    const r = validateEvent({
      payload_type: 'schoolApproved',
      school_id: 'A1',
      school_name: 's',
      school_la_code: 201,
      school_urn: 100001,
      school_establishment_number: '3001',
      school_token: null,
    });
    expect(r.ok && r.event).toEqual({
      payload_type: 'schoolApproved',
      school_id: 'A1',
      school_name: 's',
      school_la_code: '201',
      school_urn: '100001',
      school_establishment_number: '3001',
    });
  });

  it('lists every problem', () => {
    const r = validateEvent({
      payload_type: 'schoolApproved',
      school_id: 'A1/..',
      school_name: null,
      school_la_code: 1.5,
      school_urn: '1',
      school_establishment_number: '2',
      school_token: 'has space',
    });
    expect(r.ok).toBe(false);
    expect(!r.ok && r.problems.map((p) => p.split(':')[0])).toEqual(['school_id', 'school_name', 'school_la_code', 'school_token']);
    expect(validateEvent(null).ok).toBe(false);
    expect(validateEvent({ payload_type: 'toString' }).ok).toBe(false);
  });

  it('redaction drops the token; the event id ignores key order and the token', () => {
    const a = validateEvent({ payload_type: 'schoolApproved', school_id: 'A1', ...ident, school_token: 'tok' });
    const b = validateEvent({ school_token: 'other', ...ident, school_id: 'A1', payload_type: 'schoolApproved' });
    if (!a.ok || !b.ok) throw new Error('invalid');
    expect(JSON.stringify(redactEvent(a.event))).not.toContain('tok"');
    expect(eventId(a.event)).toBe(eventId(b.event));
    expect(canonicalJson({ b: [1, { d: 1, c: 2 }], a: null })).toBe('{"a":null,"b":[1,{"c":2,"d":1}]}');
  });
});

describe('purge selection', () => {
  it('selects exactly the school segment, never the receiver records or manifests', () => {
    const paths = [
      'achievements/region=uk/school_id=A1/r-0001.parquet',
      'achievements/region=uk/school_id=A10/r-0001.parquet',
      '_state/region=uk/school_id=A1.json',
      '_state/region=uk/school_id=A1/known/achievements.json',
      '_state/region=uk/school_id=A11.json',
      '_state/_directives/school_id=A1.json',
      '_state/_webhooks/last/school_id=A1.json',
      '_manifests/r.json',
    ];
    expect(selectSchoolPaths(paths, 'A1')).toEqual({
      data: ['achievements/region=uk/school_id=A1/r-0001.parquet'],
      state: ['_state/region=uk/school_id=A1.json', '_state/region=uk/school_id=A1/known/achievements.json'],
    });
    expect(() => selectSchoolPaths(paths, '*')).toThrow(/refusing/);
  });

  it('purge run ids sort with run ids', () => {
    expect(purgeRunId(new Date('2026-11-22T01:15:58.123Z'))).toMatch(/^20261122T011558\.123Z-purge-[0-9a-f]{4}$/);
  });
});
