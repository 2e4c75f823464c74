/**
 * A resource's rows without materialising them. Row i exists for i < baseCount and its base
 * updated_at grows with i, so an updated_after/updated_before window is a binary search on i.
 * Mutations live in a small overlay keyed by i (changed, deleted, added rows); a listing merges
 * the base range (minus touched rows) with the overlay in key order. A page therefore costs
 * O(page size + overlay size + log rows), whatever the number of rows.
 */
import type { Micros } from './time.ts';

export interface OverlayEntry {
  updated: Micros;
  created?: Micros;
  deleted?: boolean;
  /** API fields that replace the generated ones (control update, achievement PUT). */
  patch?: Record<string, unknown>;
  /** Related row indexes that replace the generated ones (e.g. an achievement's students). */
  links?: Record<string, number[]>;
}

export interface Window {
  after?: Micros; // updated > after
  before?: Micros; // updated < before
}

/** An ordered, filterable sequence of row keys: what the paginator walks. */
export interface KeySource {
  /** Keys strictly greater than `afterKey`, ascending. */
  keysAfter(afterKey: number): Iterable<number>;
  /** The key to pass to keysAfter so that iteration starts at the `offset`-th row (0-based). */
  seek(offset: number): number;
}

export class LazyCollection {
  readonly overlay = new Map<number, OverlayEntry>();
  /** Touched keys, ascending (kept sorted; the overlay is small). */
  private touched: number[] = [];
  nextIndex: number;

  constructor(
    readonly baseCount: number,
    readonly baseUpdated: (i: number) => Micros,
  ) {
    this.nextIndex = baseCount;
  }

  exists(i: number): boolean {
    if (!Number.isInteger(i) || i < 0) return false;
    const o = this.overlay.get(i);
    if (o) return !o.deleted;
    return i < this.baseCount;
  }

  isDeleted(i: number): boolean {
    return this.overlay.get(i)?.deleted === true;
  }

  updatedOf(i: number): Micros {
    return this.overlay.get(i)?.updated ?? this.baseUpdated(i);
  }

  entry(i: number): OverlayEntry | undefined {
    return this.overlay.get(i);
  }

  /** Records a mutation of row i (which may be a new row). */
  touch(i: number, change: OverlayEntry): OverlayEntry {
    const prev = this.overlay.get(i);
    const next: OverlayEntry = { ...prev, ...change };
    if (prev?.patch && change.patch) next.patch = { ...prev.patch, ...change.patch };
    if (!prev) insertSorted(this.touched, i);
    this.overlay.set(i, next);
    return next;
  }

  add(now: Micros): number {
    const i = this.nextIndex++;
    this.touch(i, { updated: now, created: now });
    return i;
  }

  /** Every existing key, ascending, optionally filtered. */
  view(win: Window, pred?: (i: number) => boolean): KeySource {
    const lo = win.after === undefined ? 0 : this.firstAbove(win.after, false);
    const hi = win.before === undefined ? this.baseCount : this.firstAbove(win.before, true);
    const extra = this.touched.filter((i) => {
      const o = this.overlay.get(i)!;
      if (o.deleted) return false;
      return (win.after === undefined || o.updated > win.after) && (win.before === undefined || o.updated < win.before);
    });
    const touchedSet = new Set(this.touched);
    const touched = this.touched;
    return {
      *keysAfter(afterKey: number) {
        let b = Math.max(lo, Math.floor(afterKey) + 1);
        let x = upperBound(extra, afterKey);
        for (;;) {
          while (b < hi && touchedSet.has(b)) b++;
          const fromBase = b < hi ? b : Infinity;
          const fromExtra = x < extra.length ? extra[x] : Infinity;
          if (fromBase === Infinity && fromExtra === Infinity) return;
          let key: number;
          if (fromBase < fromExtra) key = b++;
          else key = extra[x++];
          if (!pred || pred(key)) yield key;
        }
      },
      seek(offset: number) {
        if (offset <= 0) return -1;
        if (pred) {
          let seen = 0;
          for (const k of this.keysAfter(-1)) if (++seen === offset) return k;
          return Number.MAX_SAFE_INTEGER;
        }
        // count(keys < x) is monotonic in x: find the smallest x where it reaches offset.
        const count = (x: number) => {
          const top = Math.min(x, hi);
          const base = top > lo ? top - lo - (lowerBound(touched, top) - lowerBound(touched, lo)) : 0;
          return base + lowerBound(extra, x);
        };
        let a = extra.length ? Math.min(lo, extra[0]) : lo;
        let z = Math.max(hi, extra.length ? extra[extra.length - 1] + 1 : 0);
        if (count(z) < offset) return Number.MAX_SAFE_INTEGER;
        while (a < z) {
          const mid = Math.floor((a + z) / 2);
          if (count(mid) >= offset) z = mid;
          else a = mid + 1;
        }
        return a - 1;
      },
    };
  }

  /** First base index whose updated is > t (or >= t when `inclusive`). */
  private firstAbove(t: Micros, inclusive: boolean): number {
    let a = 0;
    let z = this.baseCount;
    while (a < z) {
      const mid = Math.floor((a + z) / 2);
      const u = this.baseUpdated(mid);
      if (inclusive ? u >= t : u > t) z = mid;
      else a = mid + 1;
    }
    return a;
  }
}

/** A small in-memory list already ordered by key (schools, deletion records). */
export function arraySource<T>(items: readonly T[], keyOf: (t: T) => number, pred: (t: T) => boolean): KeySource {
  const keys = items.filter(pred).map(keyOf);
  return {
    *keysAfter(afterKey: number) {
      for (let x = upperBound(keys, afterKey); x < keys.length; x++) yield keys[x];
    },
    seek(offset: number) {
      if (offset <= 0) return -1;
      return offset <= keys.length ? keys[offset - 1] : Number.MAX_SAFE_INTEGER;
    },
  };
}

function lowerBound(sorted: number[], v: number): number {
  let a = 0;
  let z = sorted.length;
  while (a < z) {
    const m = (a + z) >> 1;
    if (sorted[m] < v) a = m + 1;
    else z = m;
  }
  return a;
}

function upperBound(sorted: number[], v: number): number {
  let a = 0;
  let z = sorted.length;
  while (a < z) {
    const m = (a + z) >> 1;
    if (sorted[m] <= v) a = m + 1;
    else z = m;
  }
  return a;
}

function insertSorted(sorted: number[], v: number): void {
  sorted.splice(lowerBound(sorted, v), 0, v);
}
