import { inheritMarks } from '../decode/index.ts';
import { convertDatetime } from '../flatten/index.ts';
import { naiveUtc } from '../manifest/state.ts';

/**
 * One big school's full read split into disjoint updated_at windows, each its own cursor walk, so
 * a school of a million rows is read by several connections at once instead of one cursor chain.
 *
 * The windows are equal slices of time between the oldest updated_at on the first page and the
 * newest updated_at in the school, found by a few rounds of one-row probes (boundNewest): a
 * school's rows often stop long before the server's clock (a school last synchronised months
 * ago), and slices up to the clock would put every row in the first window. The first window is
 * open below and the last open above, so every row falls in some window whatever the sample and
 * the probes showed. The service takes
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

/** Whether a fresh read of this task is split into windows: a full read of a list the service filters by updated_at. */
export function readsInWindows(t: {
  windows: number;
  mode: string;
  spec: { paginated: boolean; updatedAtField?: string | undefined };
}): t is typeof t & { spec: { updatedAtField: string } } {
  return t.windows > 1 && t.mode === 'full' && t.spec.paginated && t.spec.updatedAtField !== undefined;
}

/**
 * The windows of a full read whose first page is `sample`: from its oldest updated_at to the
 * newest the probes find below the server's clock at the start of the read.
 */
export async function planWindows(
  sample: readonly unknown[],
  o: { field: string; until: Date; k: number },
  anyAfter: AnyAfter,
): Promise<{ windows: TimeWindow[]; boundaries: number[] }> {
  // a loop, not Math.min(...stamps): a first page of ~125,000 rows or more overflows the spread
  let oldest = Infinity;
  let known = -Infinity;
  for (const r of sample) {
    const t = updatedAtMs(r, o.field);
    if (t === undefined) continue;
    oldest = Math.min(oldest, t);
    known = Math.max(known, t);
  }
  if (oldest === Infinity) oldest = known = 0;
  const { newest } = await boundNewest({ oldest, known, until: o.until.getTime(), probes: o.k }, anyAfter);
  return splitByTime(new Date(oldest), new Date(newest), o.k);
}

/** How boundNewest asks the service whether any row was updated after an instant (epoch ms). */
export type AnyAfter = (ms: number) => Promise<boolean>;

/**
 * An upper bound of the newest updated_at in (known, until], where `known` is a stamp some row
 * has (the sample's newest; `oldest` is the sample's oldest). Each round asks `probes` questions
 * at once, in one round trip, and keeps the step where rows stop. The first round's steps grow
 * geometrically from `known`, starting at the sample's own span, so rows that stop an hour or a
 * year before the clock are both found in three rounds or fewer, and its last step is the last
 * even one, so rows that reach the clock are found in one; later rounds step evenly. It
 * stops once the doubt is under a quarter of the rows' span found so far (the windows then lose
 * at most about a quarter of their parallelism to empty time), at two seconds, or after `rounds`.
 */
export async function boundNewest(
  o: { oldest: number; known: number; until: number; probes: number; rounds?: number },
  anyAfter: AnyAfter,
): Promise<{ newest: number; probes: number }> {
  let lo = Math.floor(o.known / SECOND) * SECOND;
  let hi = Math.max(lo, o.until);
  let asked = 0;
  for (let round = 0; round < (o.rounds ?? 3); round++) {
    if (hi - lo <= Math.max(2 * SECOND, (lo - o.oldest) / 4)) break;
    const points = round === 0 ? growingPoints(lo, hi, o.probes, lo - o.oldest) : evenPoints(lo, hi, o.probes);
    const answers = await Promise.all(points.map(anyAfter));
    asked += points.length;
    const last = answers.lastIndexOf(true);
    if (last >= 0) lo = points[last]!;
    if (last + 1 < points.length) hi = points[last + 1]!;
  }
  return { newest: hi, probes: asked };
}

/** Up to n whole seconds strictly inside (lo, hi), at equal steps. */
function evenPoints(lo: number, hi: number, n: number): number[] {
  return wholeSecondsInside(lo, hi, (i) => lo + ((hi - lo) * i) / (n + 1), n);
}

/**
 * Up to n whole seconds strictly inside (lo, hi): n - 1 at distances from lo growing by a constant
 * ratio from `first`, and the last at the last even step, so a school whose rows reach to the
 * clock is known after this one round.
 */
function growingPoints(lo: number, hi: number, n: number, first: number): number[] {
  const step = Math.max(SECOND, first);
  const lastStep = hi - (hi - lo) / (n + 1);
  if (n < 2 || step * (n + 1) >= hi - lo) return evenPoints(lo, hi, n); // the sample spans a step already: even steps are finer
  const ratio = Math.pow((lastStep - lo) / step, 1 / (n - 1));
  return wholeSecondsInside(lo, hi, (i) => (i < n ? lo + step * Math.pow(ratio, i - 1) : lastStep), n);
}

function wholeSecondsInside(lo: number, hi: number, at: (i: number) => number, n: number): number[] {
  const points: number[] = [];
  for (let i = 1; i <= n; i++) {
    const p = Math.floor(at(i) / SECOND) * SECOND;
    if (p > (points.at(-1) ?? lo) && p < hi) points.push(p);
  }
  return points;
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
    inheritMarks(records, out); // what the decoder knew of the page holds for what is kept of it
    return out;
  }

  private nearBoundary(r: unknown): boolean {
    const t = updatedAtMs(r, this.field);
    if (t === undefined) return true; // unknown stamp: remember, never risk a duplicate
    return this.zones.some(([lo, hi]) => t >= lo && t <= hi);
  }
}
