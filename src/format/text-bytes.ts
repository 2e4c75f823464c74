/**
 * Collects text rows straight into UTF-8 bytes. Appending each row to one growing Buffer costs
 * about half of concatenating the page into one string and converting it at the end: V8 must
 * flatten a page-long rope of small pieces first (profiled: Buffer.from was 12% of a CSV export).
 */
export class TextBytes {
  private buf: Buffer;
  private used = 0;

  constructor(expectedBytes = 64 * 1024) {
    this.buf = Buffer.allocUnsafe(Math.max(1024, expectedBytes));
  }

  /** Bytes of the longest text appended. */
  longest = 0;

  append(text: string): void {
    // 3 bytes per UTF-16 unit bounds UTF-8 (a surrogate pair: 4 bytes for 2 units)
    this.reserve(text.length * 3);
    const n = this.buf.write(text, this.used);
    this.used += n;
    if (n > this.longest) this.longest = n;
  }

  /** The bytes so far; the builder must not be used afterwards (the Buffer is handed over). */
  take(): Buffer {
    return this.buf.subarray(0, this.used);
  }

  get length(): number {
    return this.used;
  }

  private reserve(n: number): void {
    if (this.used + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.used + n));
    this.buf.copy(next, 0, 0, this.used);
    this.buf = next;
  }
}
