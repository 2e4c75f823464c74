/**
 * One Parquet column of a row group being built, straight into bytes: a definition level per
 * row (1 = value, 0 = null; every column is OPTIONAL and flat) and the non-null values already
 * PLAIN-encoded (BYTE_ARRAY: 4-byte length + UTF-8; INT64: 8 bytes LE; DOUBLE: 8 bytes LE;
 * BOOLEAN: one byte per value here, bit-packed when the page is written). No object per value,
 * no BigInt: what is appended is what is written.
 */
import type { ColumnSlice } from '../chunk.ts';

export type Physical = 'BYTE_ARRAY' | 'INT64' | 'DOUBLE' | 'BOOLEAN';

const TWO32 = 4294967296;

export class ColumnBuilder {
  defs: Uint8Array;
  rows = 0;
  data: Buffer;
  used = 0;
  nonNull = 0;
  /** INT64/DOUBLE statistics (numbers: our INT64 values are below 2^53) */
  min = Infinity;
  max = -Infinity;

  // Small at first, doubling as rows come: a run of thousands of one-row tasks allocated 17 KB
  // per column per table per task (measured: most of an incremental night's garbage collection).
  constructor(
    readonly physical: Physical,
    expectedRows = 64,
    expectedBytes = 1024,
  ) {
    this.defs = new Uint8Array(expectedRows);
    this.data = Buffer.allocUnsafeSlow(expectedBytes); // its own memory: a page's columns may move to another thread
  }

  private def(d: number): void {
    if (this.rows === this.defs.length) {
      const next = new Uint8Array(this.defs.length * 2);
      next.set(this.defs);
      this.defs = next;
    }
    this.defs[this.rows++] = d;
  }

  private reserve(n: number): void {
    if (this.used + n <= this.data.length) return;
    const next = Buffer.allocUnsafeSlow(Math.max(this.data.length * 2, this.used + n));
    this.data.copy(next, 0, 0, this.used);
    this.data = next;
  }

  null(): void {
    this.def(0);
  }

  /** UTF-8 text; lone surrogates become U+FFFD, as Buffer encoding does everywhere else. */
  string(s: string): void {
    this.def(1);
    this.nonNull++;
    this.reserve(4 + s.length * 3);
    const n = this.data.write(s, this.used + 4);
    this.data.writeUInt32LE(n, this.used);
    this.used += 4 + n;
  }

  /** Text already UTF-8: bytes [start, end) of `b` (a memo's cached encoding), the bytes string() writes for it. */
  utf8Range(b: Buffer, start: number, end: number): void {
    const n = end - start;
    this.def(1);
    this.nonNull++;
    this.reserve(4 + n);
    const data = this.data;
    data.writeUInt32LE(n, this.used);
    const at = this.used + 4;
    // short values byte by byte: cheaper than a call into Buffer.copy, and no view to allocate
    if (n < 48) for (let i = 0; i < n; i++) data[at + i] = b[start + i]!;
    else b.copy(data, at, start, end);
    this.used = at + n;
  }

  /** A safe integer (microseconds since the epoch for timestamps, which may be negative). */
  int64(v: number): void {
    this.def(1);
    this.nonNull++;
    if (v < this.min) this.min = v;
    if (v > this.max) this.max = v;
    this.reserve(8);
    const hi = Math.floor(v / TWO32);
    this.data.writeUInt32LE(v - hi * TWO32, this.used);
    this.data.writeInt32LE(hi, this.used + 4);
    this.used += 8;
  }

  double(v: number): void {
    this.def(1);
    this.nonNull++;
    if (v < this.min) this.min = v;
    if (v > this.max) this.max = v;
    this.reserve(8);
    this.data.writeDoubleLE(v, this.used);
    this.used += 8;
  }

  boolean(v: boolean): void {
    this.def(1);
    this.nonNull++;
    this.reserve(1);
    this.data[this.used++] = v ? 1 : 0;
  }

  /** Appends rows encoded elsewhere (a worker, or a page encoder's own builder). */
  appendSlice(c: ColumnSlice): void {
    const n = c.defs.length;
    while (this.rows + n > this.defs.length) {
      const next = new Uint8Array(this.defs.length * 2);
      next.set(this.defs.subarray(0, this.rows));
      this.defs = next;
    }
    this.defs.set(c.defs, this.rows);
    this.rows += n;
    this.reserve(c.data.length);
    this.data.set(c.data, this.used);
    this.used += c.data.length;
    this.nonNull += c.nonNull;
    if (c.min < this.min) this.min = c.min;
    if (c.max > this.max) this.max = c.max;
  }

  /**
   * The rows so far as a standalone slice, then empty: copied out at their exact size into
   * buffers of their own (never Node's shared pool, so they can be transferred to another thread),
   * while the builder keeps its buffers for the next rows.
   */
  take(): ColumnSlice {
    const data = Buffer.allocUnsafeSlow(this.used);
    this.data.copy(data, 0, 0, this.used);
    const out: ColumnSlice = {
      physical: this.physical,
      defs: this.defs.slice(0, this.rows),
      data,
      nonNull: this.nonNull,
      min: this.min,
      max: this.max,
    };
    this.reset();
    return out;
  }

  /** Bytes held (levels and values): what row groups are bounded by. */
  get byteSize(): number {
    return this.rows + this.used;
  }

  /** Empties the column for the next row group, keeping its buffers. */
  reset(): void {
    this.rows = 0;
    this.used = 0;
    this.nonNull = 0;
    this.min = Infinity;
    this.max = -Infinity;
  }
}

/** The 8 bytes of an INT64 or DOUBLE statistic. */
export function statBytes(physical: Physical, v: number): Buffer {
  const b = Buffer.allocUnsafe(8);
  if (physical === 'DOUBLE') b.writeDoubleLE(v, 0);
  else {
    const hi = Math.floor(v / TWO32);
    b.writeUInt32LE(v - hi * TWO32, 0);
    b.writeInt32LE(hi, 4);
  }
  return b;
}
