/**
 * Times are integers of microseconds since the epoch (the API shows microseconds). Datetime
 * objects are rendered in a named zone: the zone offset comes from Intl once per zone and
 * 15-minute bucket (every transition of the zones we serve falls on such a boundary), so
 * rendering a row costs arithmetic, not an Intl call.
 */
export type Micros = number;

export interface DateTimeObject {
  date: string;
  timezone_type: 3;
  timezone: string;
}

const BUCKET_MS = 15 * 60 * 1000;
const formatters = new Map<string, Intl.DateTimeFormat>();
const offsets = new Map<string, Map<number, number>>();

function formatterFor(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    formatters.set(zone, f);
  }
  return f;
}

function computeOffsetMs(zone: string, ms: number): number {
  const parts: Record<string, number> = {};
  for (const p of formatterFor(zone).formatToParts(new Date(ms))) {
    if (p.type !== 'literal') parts[p.type] = Number(p.value);
  }
  const local = Date.UTC(parts.year, parts.month - 1, parts.day, parts.hour, parts.minute, parts.second);
  return local - Math.floor(ms / 1000) * 1000;
}

/** Offset of `zone` from UTC at instant `ms`, in milliseconds. */
export function zoneOffsetMs(zone: string, ms: number): number {
  if (zone === 'UTC') return 0;
  let byBucket = offsets.get(zone);
  if (!byBucket) {
    byBucket = new Map();
    offsets.set(zone, byBucket);
  }
  const bucket = Math.floor(ms / BUCKET_MS);
  let off = byBucket.get(bucket);
  if (off === undefined) {
    if (byBucket.size > 500_000) byBucket.clear(); // bound memory on absurd ranges
    off = computeOffsetMs(zone, bucket * BUCKET_MS);
    byBucket.set(bucket, off);
  }
  return off;
}

const P2 = Array.from({ length: 60 }, (_, k) => String(k).padStart(2, '0'));
const dayStrings = new Map<number, string>();

function dayString(day: number): string {
  let s = dayStrings.get(day);
  if (s === undefined) {
    if (dayStrings.size > 50_000) dayStrings.clear();
    s = new Date(day * 86_400_000).toISOString().slice(0, 10) + ' ';
    dayStrings.set(day, s);
  }
  return s;
}

/** The API's datetime object for an instant, shown in `zone`. Hot path: plain arithmetic, cached day strings. */
export function dt(us: Micros, zone: string): DateTimeObject {
  const sec = Math.floor(us / 1_000_000);
  const local = sec + (zone === 'UTC' ? 0 : zoneOffsetMs(zone, sec * 1000) / 1000);
  return wallDt(local, us - sec * 1_000_000, zone);
}

/**
 * A datetime object holding a wall-clock time as given (`localSec`: seconds of the wall time as if
 * it were UTC, `fracUs` its microseconds), whether or not that time exists in `zone` (a time in a
 * spring-forward gap) or exists twice (an autumn fold): what a MIS storing local times sends.
 */
export function wallDt(localSec: number, fracUs: number, zone: string): DateTimeObject {
  const day = Math.floor(localSec / 86_400);
  const t = localSec - day * 86_400;
  const h = Math.floor(t / 3600);
  const m = Math.floor((t - h * 3600) / 60);
  const date = dayString(day) + P2[h] + ':' + P2[m] + ':' + P2[t - h * 3600 - m * 60] + '.' + String(1_000_000 + fracUs).slice(1);
  return { date, timezone_type: 3, timezone: zone };
}

export function dtOrNull(us: Micros | null, zone: string): DateTimeObject | null {
  return us === null ? null : dt(us, zone);
}

export function microsOf(iso: string): Micros {
  return Date.parse(iso) * 1000;
}

/** ISO 8601 with microseconds and Z, e.g. for webhook payloads. */
export function isoMicros(us: Micros): string {
  const iso = new Date(Math.floor(us / 1000)).toISOString();
  return `${iso.slice(0, 19)}.${String(us % 1_000_000).padStart(6, '0')}Z`;
}

const QUERY_DATE = /^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?)?(Z|[+-]\d{2}:?\d{2}| \d{2}:?\d{2})?$/;

/**
 * Reads an updated_after / updated_before style value. A value with Z or an offset is an
 * instant; a naive one is read as wall time in `naiveZone`. A "+" that arrived unencoded in a
 * query string decodes to a space, so " 01:00" after a time is read as "+01:00".
 * Returns null when the text is not a date.
 */
export function parseQueryDate(text: string, naiveZone: string): Micros | null {
  const m = QUERY_DATE.exec(text.trim());
  if (!m) return null;
  const [y, mo, d, h, mi, s] = [m[1], m[2], m[3], m[4] ?? '0', m[5] ?? '0', m[6] ?? '0'].map(Number);
  if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 59) return null;
  const wall = Date.UTC(y, mo - 1, d, h, mi, s);
  if (new Date(wall).getUTCDate() !== d) return null; // 2024-02-30 and the like
  const frac = Number((m[7] ?? '').padEnd(6, '0'));
  const zonePart = m[8];
  let utcMs: number;
  if (zonePart === undefined) {
    utcMs = wallToUtc(wall, naiveZone);
  } else if (zonePart === 'Z') {
    utcMs = wall;
  } else {
    const sign = zonePart[0] === '-' ? -1 : 1;
    const digits = zonePart.replace(/[^0-9]/g, '');
    const off = (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2, 4))) * 60_000;
    utcMs = wall - sign * off;
  }
  return utcMs * 1000 + frac;
}

/** Wall-clock ms in `zone` to a UTC instant (for a repeated hour: the first; for a skipped hour: shifted forward). */
export function wallToUtc(wallMs: number, zone: string): number {
  if (zone === 'UTC') return wallMs;
  let t = wallMs - zoneOffsetMs(zone, wallMs);
  t = wallMs - zoneOffsetMs(zone, t);
  const earlier = wallMs - zoneOffsetMs(zone, t - 3_600_000);
  if (earlier < t && earlier + zoneOffsetMs(zone, earlier) === wallMs) return earlier;
  return t;
}

/** Reads a datetime object back to an instant (used to filter on achievement_date). */
export function microsOfDt(v: DateTimeObject): Micros {
  const m = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})\.(\d{6})$/.exec(v.date);
  if (!m) return NaN;
  const wall = Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]);
  return wallToUtc(wall, v.timezone) * 1000 + Number(m[7]);
}
