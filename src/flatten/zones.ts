/**
 * UTC offsets of IANA zones, computed with Intl once per (zone, year) and then looked up by
 * binary search: no Intl call per row. A year's table holds the offset at its start and each
 * transition (the exact second, found by bisection), so DST edges are exact, not bucketed.
 */

const DAY = 86_400_000;
const HOUR = 3_600_000;

interface YearTable {
  start: number; // UTC ms of the table's first instant
  end: number;
  offset0: number; // offset (ms) at start
  at: number[]; // transition instants (UTC ms), ascending
  offsets: number[]; // offset in effect from at[i]
}

interface Zone {
  fmt: Intl.DateTimeFormat | null; // null: a fixed offset such as +05:30 or UTC
  fixed: number;
  years: Map<number, YearTable>;
  last: YearTable | null; // most rows of a page fall in one year: skip the map lookup
  /** local hour -> offset, only for hours more than a day away from any transition */
  hours: Map<number, number>;
}

const zones = new Map<string, Zone | null>();
const FIXED_RE = /^([+-])(\d{2}):?(\d{2})$/;

function zoneOf(name: string): Zone | null {
  let z = zones.get(name);
  if (z !== undefined) return z;
  const m = FIXED_RE.exec(name);
  if (name === 'UTC' || name === 'Z' || name === 'Etc/UTC' || name === 'GMT') {
    z = { fmt: null, fixed: 0, years: new Map(), last: null, hours: new Map() };
  } else if (m) {
    const ms = (Number(m[2]) * 60 + Number(m[3])) * 60_000;
    z = { fmt: null, fixed: m[1] === '-' ? -ms : ms, years: new Map(), last: null, hours: new Map() };
  } else {
    try {
      const fmt = new Intl.DateTimeFormat('en-US', {
        timeZone: name,
        hourCycle: 'h23',
        year: 'numeric',
        month: 'numeric',
        day: 'numeric',
        hour: 'numeric',
        minute: 'numeric',
        second: 'numeric',
        era: 'short',
      });
      z = { fmt, fixed: 0, years: new Map(), last: null, hours: new Map() };
    } catch {
      z = null; // unknown zone name: the caller keeps the raw value instead of guessing
    }
  }
  zones.set(name, z);
  return z;
}

/** The slow, exact offset from Intl (whole seconds). Only used to build year tables. */
function intlOffset(fmt: Intl.DateTimeFormat, t: number): number {
  const s = Math.floor(t / 1000) * 1000;
  const p: Record<string, string> = {};
  for (const part of fmt.formatToParts(s)) p[part.type] = part.value;
  let year = Number(p.year);
  if (p.era === 'BC' || p.era === 'B') year = 1 - year;
  const local = Date.UTC(year, Number(p.month) - 1, Number(p.day), Number(p.hour), Number(p.minute), Number(p.second));
  return local - s;
}

function buildYear(fmt: Intl.DateTimeFormat, year: number): YearTable {
  // Cover a little more than the year so lookups near its edges need no neighbour table.
  const start = Date.UTC(year, 0, 1) - 2 * DAY;
  const end = Date.UTC(year + 1, 0, 1) + 2 * DAY;
  const offset0 = intlOffset(fmt, start);
  const at: number[] = [];
  const offsets: number[] = [];
  let prevT = start;
  let prev = offset0;
  for (let t = start + DAY / 2; t <= end; t += DAY / 2) {
    const o = intlOffset(fmt, t);
    if (o !== prev) {
      let lo = prevT; // offset(lo) === prev, offset(hi) === o
      let hi = t;
      while (hi - lo > 1000) {
        const mid = lo + Math.floor((hi - lo) / 2000) * 1000;
        if (intlOffset(fmt, mid) === prev) lo = mid;
        else hi = mid;
      }
      at.push(hi);
      offsets.push(o);
    }
    prevT = t;
    prev = o;
  }
  return { start, end, offset0, at, offsets };
}

function tableFor(z: Zone, t: number): YearTable {
  const last = z.last;
  if (last && t >= last.start && t < last.end) return last;
  const year = new Date(t).getUTCFullYear();
  let y = z.years.get(year);
  if (!y) {
    y = buildYear(z.fmt!, year);
    z.years.set(year, y);
  }
  z.last = y;
  return y;
}

/** Offset (ms, local minus UTC) of zone `z` at UTC instant `t`. */
function offsetAt(z: Zone, t: number): number {
  if (!z.fmt) return z.fixed;
  const y = tableFor(z, t);
  let o = y.offset0;
  for (let i = 0; i < y.at.length && y.at[i] <= t; i++) o = y.offsets[i];
  return o;
}

/** True when `name` is a zone we can convert (IANA name, UTC, or a fixed ±HH:MM offset). */
export function isKnownZone(name: string): boolean {
  return zoneOf(name) !== null;
}

/**
 * UTC ms of local wall-clock time `local` (expressed as if it were UTC ms) in zone `name`;
 * undefined for an unknown zone. Disambiguation is Temporal's 'compatible':
 *  - a local time that occurs twice (autumn fold) resolves to the EARLIER instant (first occurrence);
 *  - a local time that never occurs (spring-forward gap) is shifted forward by the gap's length,
 *    i.e. interpreted with the offset in effect before the transition (02:30 in London on the
 *    last Sunday of March becomes 03:30 BST = 02:30Z).
 */
export function localToUtc(local: number, name: string): number | undefined {
  const z = zoneOf(name);
  if (!z) return undefined;
  if (!z.fmt) return local - z.fixed;
  const hour = Math.floor(local / HOUR);
  const known = z.hours.get(hour);
  if (known !== undefined) return local - known;
  const before = offsetAt(z, local - DAY);
  const after = offsetAt(z, local + DAY);
  const tBefore = local - before;
  const okBefore = offsetAt(z, tBefore) === before;
  if (before === after && okBefore) {
    // No transition within a day of this hour: every local time in it has this offset.
    if (z.hours.size >= 200_000) z.hours.clear();
    z.hours.set(hour, before);
    return tBefore;
  }
  if (before === after) return local - offsetAt(z, tBefore);
  const tAfter = local - after;
  const okAfter = offsetAt(z, tAfter) === after;
  if (okBefore && okAfter) return Math.min(tBefore, tAfter); // fold: first occurrence
  if (okBefore) return tBefore;
  if (okAfter) return tAfter;
  return tBefore; // gap: the pre-transition offset pushes the time forward by the gap
}
