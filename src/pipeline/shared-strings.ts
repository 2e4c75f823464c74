/**
 * One string for many equal ones. A run holds a plan for every task of every school until the task
 * starts, and a manifest entry for every task until it ends (100,000 of each at 10,000 schools);
 * most schools' states name the same few runs and watermarks, so equal texts read or derived from
 * them (the run a content hash came from, the previous watermark, updated_after, the plan's
 * reason) took 2-3 MB of copies each.
 * Bounded: it starts again when full, which only costs sharing.
 */
export class SharedStrings {
  private readonly known = new Map<string, string>();
  constructor(private readonly limit = 1024) {}

  /** The string for `key`: `make(key)` the first time, the same string after. */
  of(key: string, make: (key: string) => string = (k) => k): string {
    let s = this.known.get(key);
    if (s === undefined) {
      if (this.known.size >= this.limit) this.known.clear();
      s = make(key);
      this.known.set(key, s);
    }
    return s;
  }
}
