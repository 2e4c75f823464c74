import { convertDatetime } from '../flatten/index.ts';

/**
 * One big school's full read split into disjoint updated_at windows, each its own cursor walk, so
 * a school of a million rows is read by several connections at once instead of one cursor chain.
 *
 * The windows are equal slices of time between the oldest updated_at on the first page and the
 * server's clock at the start of the read; the first is open below and the last open above, so
 * every row falls in some window whatever the first page's sample showed. The service takes
 * naive times to the second and may read them as UTC or Europe/London (spec: not shown), but it
 * reads both bounds the same way, so neighbouring windows meet; each bound is widened by a second
 * so a row stamped exactly on it is in both, and the duplicates are dropped by id (WindowDedupe).
 */
export interface TimeWindow {
  /** updated_after as sent (naive UTC text), absent for the first window. */
  after?: string;
  /** updated_before as sent, absent for the last window. */
  before?: string;
}

const SECOND = 1000;

export function naiveUtc(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19).replace('T', ' ');
}

/** k windows over [oldest, until]; boundaries on whole seconds. */
export function splitByTime(oldest: Date, until: Date, k: number): { windows: TimeWindow[]; boundaries: number[] } {
  const from = Math.floor(oldest.getTime() / SECOND) * SECOND;
  const span = Math.max(0, until.getTime() - from);
  const boundaries: number[] = [];
  for (let i = 1; i < k; i++) {
    const b = Math.floor((from + (span * i) / k) / SECOND) * SECOND;
    if (b > (boundaries.at(-1) ?? from)) boundaries.push(b);
  }
  const windows: TimeWindow[] = [];
  for (let i = 0; i <= boundaries.length; i++) {
    const lo = boundaries[i - 1];
    const hi = boundaries[i];
    windows.push({
      ...(lo !== undefined ? { after: naiveUtc(lo - SECOND) } : {}),
      ...(hi !== undefined ? { before: naiveUtc(hi + SECOND) } : {}),
    });
  }
  return { windows, boundaries };
}

/** The instant of a record's updated_at (the API's datetime object), or undefined. */
export function updatedAtMs(record: unknown, field: string): number | undefined {
  const v = (record as Record<string, unknown> | null)?.[field];
  const instant = v ? convertDatetime(v).instant : null;
  const ms = instant ? Date.parse(instant) : NaN;
  return Number.isNaN(ms) ? undefined : ms;
}

/**
 * Drops a record already written in this task. Only records that can be in two windows are
 * remembered: those stamped near a boundary (within its second, and an hour earlier for a
 * service reading naive times as Europe/London in summer), plus the first page's ids, which the
 * windows read again. Memory stays a small fraction of the school's rows.
 */
export class WindowDedupe {
  private readonly seen = new Set<string>();
  private readonly zones: [number, number][];

  constructor(
    boundaries: number[],
    private readonly field: string,
    private readonly key: string,
  ) {
    this.zones = boundaries.map((b) => [b - 3600 * SECOND - 2 * SECOND, b + 2 * SECOND]);
  }

  /** Remembers every id of these records (the sample page). */
  remember(records: readonly unknown[]): void {
    for (const r of records) {
      const id = (r as Record<string, unknown> | null)?.[this.key];
      if (id !== undefined && id !== null) this.seen.add(String(id));
    }
  }

  /** The records not written yet; those near a boundary are remembered. */
  admit(records: readonly unknown[]): unknown[] {
    const out: unknown[] = [];
    for (const r of records) {
      const raw = (r as Record<string, unknown> | null)?.[this.key];
      const id = raw === undefined || raw === null ? undefined : String(raw);
      if (id !== undefined && this.seen.has(id)) continue;
      if (id !== undefined && this.nearBoundary(r)) this.seen.add(id);
      out.push(r);
    }
    return out;
  }

  private nearBoundary(r: unknown): boolean {
    const t = updatedAtMs(r, this.field);
    if (t === undefined) return true; // unknown stamp: remember, never risk a duplicate
    return this.zones.some(([lo, hi]) => t >= lo && t <= hi);
  }
}
