/**
 * Fast parsing of fixed-layout date-times ('YYYY-MM-DD HH:MM:SS' and the ISO 'T' form) into
 * milliseconds. Date.UTC and regular expressions per value dominated profiles, so the hour is
 * parsed digit by digit and its start cached: a page's values fall in relatively few hours.
 */

/** Decimal value of s[from, to) when every char is a digit, else NaN. */
export function digits(s: string, from: number, to: number): number {
  let n = 0;
  for (let i = from; i < to; i++) {
    const c = s.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return NaN;
    n = n * 10 + c;
  }
  return n;
}

const hourStart = new Map<number, number>();

/**
 * Milliseconds (as if UTC) of the wall time 'YYYY-MM-DD?HH:MM:SS' at the start of `s`, with any
 * separator at index 10; NaN when the layout or a field is invalid (callers then fall back).
 */
export function civilMs(s: string): number {
  if (s.charCodeAt(4) !== 45 || s.charCodeAt(7) !== 45 || s.charCodeAt(13) !== 58 || s.charCodeAt(16) !== 58) return NaN;
  const y = digits(s, 0, 4);
  const mo = digits(s, 5, 7);
  const d = digits(s, 8, 10);
  const h = digits(s, 11, 13);
  const mi = digits(s, 14, 16);
  const se = digits(s, 17, 19);
  if (!(mo >= 1 && mo <= 12 && d >= 1 && d <= 31 && h <= 23 && mi <= 59 && se <= 59)) return NaN; // NaN fails too
  const key = ((y * 100 + mo) * 100 + d) * 100 + h;
  let start = hourStart.get(key);
  if (start === undefined) {
    start = Date.UTC(y, mo - 1, d, h);
    if (y < 100) start = new Date(start).setUTCFullYear(y); // Date.UTC reads years 0-99 as 1900-1999
    // Date.UTC rolls 2024-02-31 over into March: refuse instead of inventing a date
    if (new Date(start).getUTCDate() !== d) return NaN;
    if (hourStart.size >= 200_000) hourStart.clear();
    hourStart.set(key, start);
  }
  return start + mi * 60_000 + se * 1000;
}
