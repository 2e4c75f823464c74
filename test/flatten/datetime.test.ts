import { describe, expect, it } from 'vitest';
import { convertDatetime, localToUtc, normalizeIso } from '../../src/flatten/index.ts';

const conv = (date: string, timezone: string) => convertDatetime({ date, timezone_type: 3, timezone });

describe('datetime objects -> UTC instant + zone', () => {
  it.each([
    // [local, zone, expected UTC]
    ['2024-03-31 00:30:00.000000', 'Europe/London', '2024-03-31T00:30:00.000000Z'], // before the spring gap
    ['2024-03-31 02:00:00.000000', 'Europe/London', '2024-03-31T01:00:00.000000Z'], // first BST instant
    ['2024-07-01 12:00:00.000000', 'Europe/London', '2024-07-01T11:00:00.000000Z'],
    ['2024-10-27 00:59:59.999999', 'Europe/London', '2024-10-26T23:59:59.999999Z'],
    ['2024-10-27 02:00:00.000000', 'Europe/London', '2024-10-27T02:00:00.000000Z'],
    ['2024-10-06 03:00:00.000000', 'Australia/Sydney', '2024-10-05T16:00:00.000000Z'], // first AEDT instant
    ['2024-07-01 09:00:00.000000', 'Australia/Sydney', '2024-06-30T23:00:00.000000Z'],
    ['2024-01-01 09:00:00.000000', 'Australia/Sydney', '2023-12-31T22:00:00.000000Z'],
    ['2024-07-01 12:00:00.500000', 'Africa/Johannesburg', '2024-07-01T10:00:00.500000Z'],
    ['2024-12-31 23:59:59.999999', 'UTC', '2024-12-31T23:59:59.999999Z'],
    ['2024-02-29 12:00:00', 'UTC', '2024-02-29T12:00:00.000000Z'], // no fraction: padded
    ['2024-02-29 12:00:00.1234567', 'UTC', '2024-02-29T12:00:00.123456Z'], // beyond micro: truncated
  ])('%s %s', (date, zone, want) => {
    expect(conv(date, zone)).toEqual({ instant: want, timezone: zone });
  });

  it('a local time that occurs twice takes the earlier instant (first occurrence)', () => {
    // London 2024-10-27 01:30 happens at 00:30Z (BST) and again at 01:30Z (GMT)
    expect(conv('2024-10-27 01:30:00.000000', 'Europe/London').instant).toBe('2024-10-27T00:30:00.000000Z');
    // Sydney 2024-04-07 02:30 happens at 15:30Z (AEDT) and 16:30Z (AEST) the day before
    expect(conv('2024-04-07 02:30:00.000000', 'Australia/Sydney').instant).toBe('2024-04-06T15:30:00.000000Z');
  });

  it('a local time that never occurs is shifted forward by the gap', () => {
    // London 2024-03-31 01:30 does not exist (01:00 -> 02:00): read as 02:30 BST = 01:30Z
    expect(conv('2024-03-31 01:30:00.654321', 'Europe/London').instant).toBe('2024-03-31T01:30:00.654321Z');
    // Sydney 2024-10-06 02:30 does not exist (02:00 -> 03:00): read as 03:30 AEDT = 16:30Z
    expect(conv('2024-10-06 02:30:00.000000', 'Australia/Sydney').instant).toBe('2024-10-05T16:30:00.000000Z');
  });

  it('agrees with Intl every 37 minutes across a year of DST changes', () => {
    const zones = ['Europe/London', 'Australia/Sydney', 'Africa/Johannesburg', 'America/New_York', 'Australia/Lord_Howe'];
    for (const zone of zones) {
      const fmt = new Intl.DateTimeFormat('en-US', {
        timeZone: zone,
        hourCycle: 'h23',
        year: 'numeric',
        month: 'numeric',
        day: 'numeric',
        hour: 'numeric',
        minute: 'numeric',
        second: 'numeric',
      });
      const wall = (t: number) => {
        const p = Object.fromEntries(fmt.formatToParts(t).map((x) => [x.type, x.value]));
        return Date.UTC(+p.year, +p.month - 1, +p.day, +p.hour, +p.minute, +p.second);
      };
      for (let t = Date.UTC(2024, 0, 1); t < Date.UTC(2025, 0, 1); t += 37 * 60_000) {
        const local = wall(t);
        const back = localToUtc(local, zone)!;
        // the answer shows the same wall time, and is never later than t (the first occurrence)
        expect(wall(back)).toBe(local);
        expect(back).toBeLessThanOrEqual(t);
      }
    }
  });

  it('converts the API layout through its per-hour cache exactly as the per-value path does, gaps and folds included', () => {
    const zones = [
      'Europe/London',
      'Australia/Sydney',
      'Australia/Lord_Howe',
      'Asia/Kolkata',
      'Asia/Kathmandu',
      'America/St_Johns',
      'UTC',
      '+05:30',
    ];
    const text = (ms: number) => new Date(ms).toISOString().slice(0, 19).replace('T', ' ') + '.123456';
    // wall times every 23 minutes over two years: whatever the zone, through its changes (one
    // expect for all of them: an expect per value made this test take a minute on a loaded machine)
    const wrong: string[] = [];
    let checked = 0;
    for (const zone of zones) {
      for (let wall = Date.UTC(2023, 0, 1); wall < Date.UTC(2025, 0, 1); wall += 23 * 60_000) {
        const want = new Date(localToUtc(wall, zone)!).toISOString().slice(0, 19) + '.123456Z';
        const got = conv(text(wall), zone);
        checked++;
        if (got.instant !== want || got.timezone !== zone) wrong.push(`${text(wall)} ${zone}: ${String(got.instant)}, want ${want}`);
      }
    }
    expect(wrong.slice(0, 20)).toEqual([]);
    expect(checked).toBe(8 * Math.ceil((731 * 24 * 60) / 23));
    // a historic offset with seconds (Monrovia's -00:44:30 until 1972), and a year below 100
    expect(conv('1960-06-01 12:00:00.000000', 'Africa/Monrovia').instant).toBe('1960-06-01T12:44:30.000000Z');
    expect(conv('0050-06-01 12:00:00.000000', 'UTC').instant).toBe('0050-06-01T12:00:00.000000Z');
  });

  it('keeps the raw value when the zone is unknown or the date unreadable', () => {
    const bad = { date: '2024-01-01 00:00:00.000000', timezone_type: 3, timezone: 'Mars/Olympus' };
    expect(convertDatetime(bad)).toEqual({ instant: null, timezone: 'Mars/Olympus', raw: bad });
    expect(convertDatetime({ date: 'yesterday', timezone_type: 3, timezone: 'UTC' }).raw).toBeDefined();
    expect(convertDatetime(42).raw).toBe(42);
    // impossible fields are not rolled over into another day
    expect(conv('2024-02-31 10:00:00.000000', 'UTC').raw).toBeDefined();
    expect(conv('2024-02-31 10:00:00', 'UTC').raw).toBeDefined();
    expect(conv('2024-01-01 24:00:00.000000', 'UTC').raw).toBeDefined();
    expect(normalizeIso('2024-02-30T00:00:00Z')).toBeUndefined();
  });

  it('null, a null date, fixed offsets and ISO strings', () => {
    expect(convertDatetime(null)).toEqual({ instant: null, timezone: null });
    expect(convertDatetime({ date: null, timezone_type: 3, timezone: 'UTC' })).toEqual({ instant: null, timezone: null });
    expect(conv('2024-01-01 05:30:00.000000', '+05:30').instant).toBe('2024-01-01T00:00:00.000000Z');
    expect(convertDatetime('2024-01-01T00:00:00+01:00')).toEqual({ instant: '2023-12-31T23:00:00.000000Z', timezone: 'UTC' });
    expect(normalizeIso('2026-11-22T01:15:58.123Z')).toBe('2026-11-22T01:15:58.123000Z');
    expect(normalizeIso('not a date')).toBeUndefined();
  });
});
