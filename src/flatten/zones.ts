/**
 * UTC offsets of IANA zones, computed with Intl once per (zone, week) and then looked up: no Intl
 * call per row. A week's table holds the offset at its start and each transition (the exact
 * second, found by bisection), so DST edges are exact, not bucketed. Weeks, not years, because a
 * run pays only for the weeks its values fall in: a small run whose dates of birth spread over
 * fifteen years built fifteen year tables per zone (about 700 Intl calls each, 40-60 ms of a
 * 0.6 s run); a big run meets every week of those years either way. On top of it, each local
 * hour a run meets is resolved once per zone (hourEntry): an hour with no transition within a day
 * of it converts every wall time in it by one subtraction; an hour near a transition (a gap, a
 * fold) takes the exact per-value path (localToUtc).
 */

const DAY = 86_400_000;
const HOUR = 3_600_000;

/** Length of a table (UTC ms). Any length works: transitionIn walks every table a window spans. */
const SPAN = 7 * DAY;
/** Probe step inside a table: transitions closer together than this could hide (none are known). */
const STEP = DAY / 2;

interface SpanTable {
  start: number; // UTC ms of the table's first instant
  end: number; // start + SPAN, probed too
  offset0: number; // offset (ms) at start
  at: number[]; // transition instants (UTC ms), ascending
  offsets: number[]; // offset in effect from at[i]
}

/** One local hour of a zone, resolved: every wall time in it is `utc = local - offset`. */
export interface HourEntry {
  /** UTC ms of the hour's first wall time (local hour start - offset) */
  utcStart: number;
  /** 'YYYY-MM-DDTHH:' of utcStart when the offset is whole hours (minutes and seconds carry over), else null */
  isoPrefix: string | null;
}

export interface Zone {
  name: string;
  fmt: Intl.DateTimeFormat | null; // null: a fixed offset such as +05:30 or UTC
  /** true: fmt formats only the offset ('GMT+11:00'); false: the full wall time (formatToParts) */
  offsetOnly: boolean;
  fixed: number;
  /** table index (floor(t / SPAN)) -> its table */
  spans: Map<number, SpanTable>;
  last: SpanTable | null; // consecutive lookups mostly fall in one table: skip the map lookup
  /** local hour key (hourKey) -> its entry, or null for an hour near a transition or not a real date */
  hours: Map<number, HourEntry | null>;
}

const zones = new Map<string, Zone | null>();
const FIXED_RE = /^([+-])(\d{2}):?(\d{2})$/;

const fixedZone = (name: string, fixed: number): Zone => ({
  name,
  fmt: null,
  offsetOnly: false,
  fixed,
  spans: new Map(),
  last: null,
  hours: new Map(),
});

/**
 * An Intl formatter of the zone's UTC offset alone ('GMT+11:00', 'GMT-00:01:15'), else of its full
 * wall time. Throws for a zone Intl does not know. The full one is built only when needed: each
 * formatter costs about a millisecond to create.
 */
function formatterOf(name: string): { fmt: Intl.DateTimeFormat; offsetOnly: boolean } {
  try {
    // a fifth of the cost of formatToParts per call, and exact to the second (historic LMT offsets too)
    const fmt = new Intl.DateTimeFormat('en-US', { timeZone: name, timeZoneName: 'longOffset' });
    if (/GMT([+-]\d\d:\d\d(:\d\d)?)?$/.test(fmt.format(0))) return { fmt, offsetOnly: true };
  } catch {
    // an unknown zone (the full formatter below throws too) or an ICU without 'longOffset'
  }
  const full = new Intl.DateTimeFormat('en-US', {
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
  return { fmt: full, offsetOnly: false };
}

export function zoneOf(name: string): Zone | null {
  let z = zones.get(name);
  if (z !== undefined) return z;
  const m = FIXED_RE.exec(name);
  if (name === 'UTC' || name === 'Z' || name === 'Etc/UTC' || name === 'GMT') {
    z = fixedZone(name, 0);
  } else if (m) {
    const ms = (Number(m[2]) * 60 + Number(m[3])) * 60_000;
    z = fixedZone(name, m[1] === '-' ? -ms : ms);
  } else {
    try {
      const { fmt, offsetOnly } = formatterOf(name);
      z = { name, fmt, offsetOnly, fixed: 0, spans: new Map(), last: null, hours: new Map() };
    } catch {
      z = null; // unknown zone name: the caller keeps the raw value instead of guessing
    }
  }
  zones.set(name, z);
  return z;
}

/** The slow, exact offset from Intl (whole seconds). Only used to build the week tables. */
function intlOffset(z: Zone, t: number): number {
  const s = Math.floor(t / 1000) * 1000;
  const fmt = z.fmt!;
  if (z.offsetOnly) {
    const text = fmt.format(s);
    const at = text.lastIndexOf('GMT');
    if (at + 3 === text.length) return 0;
    const sign = text.charCodeAt(at + 3) === 45 /* - */ ? -1 : 1;
    const h = Number(text.slice(at + 4, at + 6));
    const m = Number(text.slice(at + 7, at + 9));
    const sec = text.length > at + 9 ? Number(text.slice(at + 10, at + 12)) : 0;
    return sign * ((h * 60 + m) * 60 + sec) * 1000;
  }
  const p: Record<string, string> = {};
  for (const part of fmt.formatToParts(s)) p[part.type] = part.value;
  let year = Number(p.year);
  if (p.era === 'BC' || p.era === 'B') year = 1 - year;
  const local = Date.UTC(year, Number(p.month) - 1, Number(p.day), Number(p.hour), Number(p.minute), Number(p.second));
  return local - s;
}

function buildSpan(z: Zone, index: number): SpanTable {
  const start = index * SPAN;
  const end = start + SPAN;
  const offset0 = intlOffset(z, start);
  const at: number[] = [];
  const offsets: number[] = [];
  let prevT = start;
  let prev = offset0;
  for (let t = start + STEP; t <= end; t += STEP) {
    const o = intlOffset(z, t);
    if (o !== prev) {
      let lo = prevT; // offset(lo) === prev, offset(hi) === o
      let hi = t;
      while (hi - lo > 1000) {
        const mid = lo + Math.floor((hi - lo) / 2000) * 1000;
        if (intlOffset(z, mid) === prev) lo = mid;
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

const MAX_SPANS = 100_000; // per zone, about 1,900 years of weeks: bounded even for garbage years

function spanAt(z: Zone, index: number): SpanTable {
  let y = z.spans.get(index);
  if (!y) {
    y = buildSpan(z, index);
    if (z.spans.size >= MAX_SPANS) z.spans.clear();
    z.spans.set(index, y);
  }
  return y;
}

function tableFor(z: Zone, t: number): SpanTable {
  const last = z.last;
  if (last && t >= last.start && t < last.end) return last;
  return (z.last = spanAt(z, Math.floor(t / SPAN)));
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
  return zoneLocalToUtc(z, local);
}

/** localToUtc for a zone already looked up: exact, per value. */
export function zoneLocalToUtc(z: Zone, local: number): number {
  if (!z.fmt) return local - z.fixed;
  const before = offsetAt(z, local - DAY);
  const after = offsetAt(z, local + DAY);
  const tBefore = local - before;
  const okBefore = offsetAt(z, tBefore) === before;
  if (before === after && okBefore) return tBefore;
  if (before === after) return local - offsetAt(z, tBefore);
  const tAfter = local - after;
  const okAfter = offsetAt(z, tAfter) === after;
  if (okBefore && okAfter) return Math.min(tBefore, tAfter); // fold: first occurrence
  if (okBefore) return tBefore;
  if (okAfter) return tAfter;
  return tBefore; // gap: the pre-transition offset pushes the time forward by the gap
}

/** Whether any transition of the zone falls in [a, b] (UTC ms). */
function transitionIn(z: Zone, a: number, b: number): boolean {
  for (let i = Math.floor(a / SPAN); i <= Math.floor(b / SPAN); i++) {
    const y = spanAt(z, i);
    for (let k = 0; k < y.at.length; k++) if (y.at[k]! >= a && y.at[k]! <= b) return true;
  }
  return false;
}

/** The key of a local hour in hourEntry's cache: injective over valid fields, no Date needed. */
export const hourKey = (y: number, mo: number, d: number, h: number): number => ((y * 100 + mo) * 100 + d) * 100 + h;

const MAX_ZONE_OFFSET = 26 * HOUR; // wider than any offset there is (+14:00 .. -12:00)

/**
 * The local hour y-mo-d h of zone z resolved once: its UTC start when no transition comes within
 * a day of it (then every wall time in it has one offset, and the answer equals zoneLocalToUtc's),
 * else null: such an hour, or an impossible date (2024-02-31), takes the exact per-value path.
 */
export function hourEntry(z: Zone, y: number, mo: number, d: number, h: number): HourEntry | null {
  const key = hourKey(y, mo, d, h);
  let e = z.hours.get(key);
  if (e !== undefined) return e;
  e = resolveHour(z, y, mo, d, h);
  if (z.hours.size >= 200_000) z.hours.clear(); // bounded: a run meets a few thousand hours per zone
  z.hours.set(key, e);
  return e;
}

function resolveHour(z: Zone, y: number, mo: number, d: number, h: number): HourEntry | null {
  const at = new Date(0);
  at.setUTCFullYear(y, mo - 1, d); // years below 100 stay themselves (Date.UTC would add 1900)
  at.setUTCHours(h, 0, 0, 0);
  if (at.getUTCDate() !== d || at.getUTCMonth() !== mo - 1) return null; // 2024-02-31 is not rolled into March
  const local = at.getTime();
  let offset: number;
  if (!z.fmt) offset = z.fixed;
  else {
    if (transitionIn(z, local - DAY - MAX_ZONE_OFFSET, local + HOUR + DAY + MAX_ZONE_OFFSET)) return null;
    offset = offsetAt(z, local - DAY);
  }
  const utcStart = local - offset;
  const isoPrefix = offset % HOUR === 0 && utcStart >= -62_135_596_800_000 ? new Date(utcStart).toISOString().slice(0, 14) : null;
  return { utcStart, isoPrefix };
}
