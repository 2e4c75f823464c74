import { civilMs, digits } from '../time/civil.ts';
import { hourEntry, localToUtc, zoneLocalToUtc, zoneOf, type Zone } from './zones.ts';

/**
 * The API's datetime object {date: 'YYYY-MM-DD HH:MM:SS.ffffff', timezone_type: 3, timezone}
 * -> a UTC instant 'YYYY-MM-DDTHH:MM:SS.ffffffZ' (microseconds kept exactly: zone offsets are
 * whole seconds, so the fraction never changes) and the zone name. See zones.ts for folds/gaps.
 */

const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?$/;
const ISO_Z_RE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:?\d{2})$/;

export interface DatetimeValue {
  instant: string | null;
  timezone: string | null;
  /** set when the value could not be converted: the raw input, kept as drift rather than dropped */
  raw?: unknown;
}

function frac6(s: string | undefined): string {
  if (!s) return '000000';
  return s.length >= 6 ? s.slice(0, 6) : s + '000000'.slice(s.length);
}

// 'YYYY-MM-DDTHH:' per UTC hour, cached: Date#toISOString per value was the hottest call of a page.
const HOUR = 3_600_000;
const hourPrefix = new Map<number, string>();
const TWO = Array.from({ length: 60 }, (_, i) => (i < 10 ? '0' : '') + i);

function toIso(utcMs: number, fraction: string): string {
  const h = Math.floor(utcMs / HOUR);
  let prefix = hourPrefix.get(h);
  if (prefix === undefined) {
    if (hourPrefix.size >= 100_000) hourPrefix.clear(); // bounded: a page spans few hours anyway
    prefix = new Date(h * HOUR).toISOString().slice(0, 14);
    hourPrefix.set(h, prefix);
  }
  const rem = utcMs - h * HOUR;
  const min = Math.floor(rem / 60_000);
  return prefix + TWO[min] + ':' + TWO[Math.floor((rem - min * 60_000) / 1000)] + '.' + fraction + 'Z';
}

/** Wall time as if UTC; NaN for impossible fields (Date.UTC would roll 02-31 into March). */
function wallMs(m: RegExpExecArray): number {
  let t = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6] ?? 0));
  if (Number(m[1]) < 100) t = new Date(t).setUTCFullYear(Number(m[1])); // Date.UTC reads years 0-99 as 1900-1999
  const d = new Date(t);
  const ok =
    d.getUTCDate() === Number(m[3]) &&
    d.getUTCHours() === Number(m[4]) &&
    d.getUTCMinutes() === Number(m[5]) &&
    d.getUTCSeconds() === Number(m[6] ?? 0);
  return ok ? t : NaN;
}

/** Normalise an ISO 8601 instant with Z or an offset (what the pipeline itself produces) to our form. */
export function normalizeIso(s: string): string | undefined {
  const m = ISO_Z_RE.exec(s);
  if (!m) return undefined;
  let t = wallMs(m);
  if (Number.isNaN(t)) return undefined;
  const off = m[8];
  if (off !== 'Z') {
    const sign = off[0] === '-' ? -1 : 1;
    const digits = off.slice(1).replace(':', '');
    t -= sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2))) * 60_000;
  }
  return toIso(t, frac6(m[7]));
}

/** Convert one datetime field value. null/undefined -> both null. */
export function convertDatetime(v: unknown): DatetimeValue {
  if (v === null || v === undefined) return { instant: null, timezone: null };
  if (typeof v === 'string') {
    const iso = normalizeIso(v);
    return iso ? { instant: iso, timezone: 'UTC' } : { instant: null, timezone: null, raw: v };
  }
  if (typeof v === 'object' && !Array.isArray(v)) {
    const o = v as { date?: unknown; timezone?: unknown };
    if (o.date === null || o.date === undefined) return { instant: null, timezone: null };
    // the API's one layout, 'YYYY-MM-DD HH:MM:SS.ffffff', the way the generated serialisers read it
    if (readApiDatetime(v)) return { instant: apiDatetimeIso(), timezone: apiDatetime.zone };
    const tz = typeof o.timezone === 'string' && o.timezone !== '' ? o.timezone : 'UTC';
    const m = typeof o.date === 'string' ? DATE_RE.exec(o.date) : null;
    const local = m ? wallMs(m) : NaN;
    const utc = Number.isNaN(local) ? undefined : localToUtc(local, tz);
    if (m && utc !== undefined) return { instant: toIso(utc, frac6(m[7])), timezone: tz };
    return { instant: null, timezone: typeof o.timezone === 'string' ? o.timezone : null, raw: v };
  }
  return { instant: null, timezone: null, raw: v };
}

/**
 * The API's one datetime layout, read without allocating anything but the ISO text: fills
 * `apiDatetime` and returns true for {date: 'YYYY-MM-DD HH:MM:SS.ffffff', timezone} in a known
 * zone; false for anything else, which callers hand to convertDatetime's general path. Generated
 * serialisers call this per value, so the common case is: the digits, one cache lookup for the
 * (zone, local hour), and (for NDJSON and CSV) one concatenation. Hours near a daylight-saving
 * change are converted exactly, per value (zones.ts).
 */
export const apiDatetime = {
  utcMs: 0,
  /** microseconds within the second */
  micros: 0,
  zone: '',
  /** set when the ISO text is the hour's prefix + the wall time's 'MM:SS.ffffff' (whole-hour offsets) */
  prefix: null as string | null,
  date: '',
};

let lastZoneName = '';
let lastZone: Zone | null = null;

export function readApiDatetime(v: unknown): boolean {
  if (typeof v !== 'object' || v === null) return false;
  const o = v as { date?: unknown; timezone?: unknown };
  const date = o.date;
  if (typeof date !== 'string' || date.length !== 26) return false;
  if (date.charCodeAt(4) !== 45 || date.charCodeAt(7) !== 45 || date.charCodeAt(10) !== 32) return false;
  if (date.charCodeAt(13) !== 58 || date.charCodeAt(16) !== 58 || date.charCodeAt(19) !== 46) return false;
  const tz = o.timezone;
  const zone = typeof tz === 'string' && tz !== '' ? tz : 'UTC';
  let z: Zone | null;
  if (zone === lastZoneName) z = lastZone;
  else {
    z = zoneOf(zone);
    lastZoneName = zone;
    lastZone = z;
  }
  if (z === null) return false;
  const y = digits(date, 0, 4);
  const mo = digits(date, 5, 7);
  const d = digits(date, 8, 10);
  const h = digits(date, 11, 13);
  const mi = digits(date, 14, 16);
  const se = digits(date, 17, 19);
  const us = digits(date, 20, 26);
  // NaN (a non-digit) fails every comparison
  if (!(mo >= 1 && mo <= 12 && d >= 1 && d <= 31 && h <= 23 && mi <= 59 && se <= 59 && us >= 0)) return false;
  const e = hourEntry(z, y, mo, d, h);
  if (e !== null) {
    apiDatetime.utcMs = e.utcStart + mi * 60_000 + se * 1000;
    apiDatetime.prefix = e.isoPrefix;
  } else {
    // near a transition (or an impossible date): exact, per value
    const local = civilMs(date);
    if (local !== local) return false;
    apiDatetime.utcMs = zoneLocalToUtc(z, local);
    apiDatetime.prefix = null;
  }
  apiDatetime.micros = us;
  apiDatetime.zone = zone;
  apiDatetime.date = date;
  return true;
}

/** The instant read by readApiDatetime as our ISO text ('YYYY-MM-DDTHH:MM:SS.ffffffZ'). */
export function apiDatetimeIso(): string {
  const a = apiDatetime;
  if (a.prefix !== null) return a.prefix + a.date.slice(14) + 'Z'; // minutes, seconds and fraction as shown
  return toIso(a.utcMs, a.date.slice(20));
}

/** The instant read by readApiDatetime in microseconds since the epoch (no text round trip). */
export function apiDatetimeMicros(): number {
  return apiDatetime.utcMs * 1000 + apiDatetime.micros;
}

/** True for the API's datetime object shape (used to recognise undeclared datetimes). */
export function isDatetimeObject(v: unknown): boolean {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const o = v as Record<string, unknown>;
  return typeof o.date === 'string' && 'timezone' in o && 'timezone_type' in o && Object.keys(o).length === 3;
}
