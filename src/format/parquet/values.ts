import { ExportError } from '../../errors.ts';
import { civilMs, digits } from '../../time/civil.ts';

const ISO_RE = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?Z$/;

/**
 * '2024-03-31T00:30:00.123456Z' -> 1711845000123456 (microseconds since the epoch, UTC), or NaN
 * when the text is not such an instant. Exact: every instant of years 0000-9999 is below 2^53 µs.
 */
export function isoMicros(s: string): number {
  // Fast path for the one shape the flattener writes: 'YYYY-MM-DDTHH:MM:SS.ffffffZ'.
  if (s.length === 27 && s.charCodeAt(10) === 84 /* T */ && s.charCodeAt(19) === 46 /* . */ && s.charCodeAt(26) === 90 /* Z */) {
    const ms = civilMs(s);
    const us = digits(s, 20, 26);
    if (ms === ms && us >= 0) return ms * 1000 + us;
  }
  const m = ISO_RE.exec(s);
  const ms = m ? Date.parse(m[1] + 'Z') : NaN;
  if (!m || Number.isNaN(ms)) return NaN;
  return ms * 1000 + (m[2] ? Number((m[2] + '00000').slice(0, 6)) : 0);
}

/** isoMicros as a BigInt, throwing on text that is not an instant (kept for callers of the old API). */
export function isoToMicros(s: string): bigint {
  const us = isoMicros(s);
  if (Number.isNaN(us)) throw new ExportError('E_DATA', `not an ISO 8601 UTC timestamp: ${JSON.stringify(s).slice(0, 40)}`);
  return BigInt(us);
}

/** A value whose type does not match its column: a bug upstream of the writer, never written silently. */
export function typeMismatch(col: string, v: unknown, what: string): ExportError {
  return new ExportError('E_INTERNAL', `column ${col}: ${JSON.stringify(v)} is not ${what}`);
}
