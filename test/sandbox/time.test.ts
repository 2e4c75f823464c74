import { describe, expect, it } from 'vitest';
import { dt, isoMicros, microsOf, microsOfDt, parseQueryDate, wallToUtc } from '../../src/sandbox/time.ts';

const us = (iso: string) => microsOf(iso);

describe('datetime objects', () => {
  it('renders London around the spring and autumn changes', () => {
    expect(dt(us('2024-03-31T00:30:00Z'), 'Europe/London').date).toBe('2024-03-31 00:30:00.000000');
    expect(dt(us('2024-03-31T01:30:00Z'), 'Europe/London').date).toBe('2024-03-31 02:30:00.000000');
    expect(dt(us('2024-10-27T00:30:00Z'), 'Europe/London').date).toBe('2024-10-27 01:30:00.000000');
    expect(dt(us('2024-10-27T01:30:00Z'), 'Europe/London').date).toBe('2024-10-27 01:30:00.000000');
  });

  it('renders Sydney, Johannesburg and UTC, with microseconds', () => {
    expect(dt(us('2024-04-06T15:30:00Z'), 'Australia/Sydney').date).toBe('2024-04-07 02:30:00.000000');
    expect(dt(us('2024-04-06T16:30:00Z'), 'Australia/Sydney').date).toBe('2024-04-07 02:30:00.000000');
    expect(dt(us('2024-10-05T16:30:00Z'), 'Australia/Sydney').date).toBe('2024-10-06 03:30:00.000000');
    expect(dt(us('2024-06-30T21:59:59Z') + 999_999, 'Africa/Johannesburg')).toEqual({
      date: '2024-06-30 23:59:59.999999',
      timezone_type: 3,
      timezone: 'Africa/Johannesburg',
    });
    expect(dt(us('2024-12-31T23:59:59Z') + 5, 'UTC').date).toBe('2024-12-31 23:59:59.000005');
    expect(isoMicros(us('2024-12-31T23:59:59Z') + 5)).toBe('2024-12-31T23:59:59.000005Z');
  });

  it('reads a datetime object back to its instant', () => {
    const t = us('2024-03-31T01:30:00Z') + 42;
    expect(microsOfDt(dt(t, 'Europe/London'))).toBe(t);
    expect(microsOfDt(dt(t, 'Australia/Sydney'))).toBe(t);
  });
});

describe('query dates', () => {
  it('reads naive values in the configured zone', () => {
    expect(parseQueryDate('2024-07-01 10:00:00', 'UTC')).toBe(us('2024-07-01T10:00:00Z'));
    expect(parseQueryDate('2024-07-01 10:00:00', 'Europe/London')).toBe(us('2024-07-01T09:00:00Z'));
    expect(parseQueryDate('2024-01-01', 'Europe/London')).toBe(us('2024-01-01T00:00:00Z'));
    expect(parseQueryDate('2024-07-01T10:00:00.5', 'UTC')).toBe(us('2024-07-01T10:00:00.500Z'));
  });

  it('honours Z and offsets, including a "+" decoded to a space', () => {
    expect(parseQueryDate('2024-07-01 10:00:00Z', 'Europe/London')).toBe(us('2024-07-01T10:00:00Z'));
    expect(parseQueryDate('2024-07-01T10:00:00+02:00', 'UTC')).toBe(us('2024-07-01T08:00:00Z'));
    expect(parseQueryDate('2024-07-01 10:00:00 02:00', 'UTC')).toBe(us('2024-07-01T08:00:00Z'));
    expect(parseQueryDate('2024-07-01T10:00:00-0130', 'UTC')).toBe(us('2024-07-01T11:30:00Z'));
  });

  it('refuses what is not a date', () => {
    for (const bad of ['yesterday', '2024-13-01', '2024-02-30', '2024-01-01 25:00', '']) {
      expect(parseQueryDate(bad, 'UTC'), bad).toBeNull();
    }
  });

  it('maps a repeated London hour to its first pass', () => {
    expect(wallToUtc(Date.UTC(2024, 9, 27, 1, 30), 'Europe/London')).toBe(Date.parse('2024-10-27T00:30:00Z'));
    expect(wallToUtc(Date.UTC(2024, 5, 1, 12, 0), 'Europe/London')).toBe(Date.parse('2024-06-01T11:00:00Z'));
  });
});
