/**
 * A Parquet file for flat tables of OPTIONAL columns, encoded from ColumnBuilders into bytes:
 * 'PAR1', row groups (one data page V1 per column chunk: RLE definition levels + PLAIN values,
 * snappy), then the footer. Types: text BYTE_ARRAY (STRING / UTF8), integers INT64, doubles
 * DOUBLE, booleans BOOLEAN, timestamps INT64 TIMESTAMP(isAdjustedToUTC=true, MICROS) with the
 * converted type TIMESTAMP_MICROS for older readers (BigQuery and Snowflake load both).
 * Pure: bytes in memory, no streams, so it runs the same in a worker thread.
 */
import { SnappyCompressor } from 'snappyjs/snappy_compressor.js';
import type { ColumnType } from '../../table.ts';
import { ColumnBuilder, statBytes, type Physical } from './column.ts';
import type { ColumnSlice } from '../chunk.ts';
import { encodeStruct, i64, list, struct, type ThriftStruct } from './thrift.ts';

const MAGIC = Buffer.from('PAR1', 'latin1');
const TYPE = { BOOLEAN: 0, INT64: 2, DOUBLE: 5, BYTE_ARRAY: 6 } as const;
const OPTIONAL = 1;
const CONVERTED_UTF8 = 0;
const CONVERTED_TIMESTAMP_MICROS = 10;
const ENC_PLAIN = 0;
const ENC_RLE = 3;
const CODEC_SNAPPY = 1;
const PAGE_DATA_V1 = 0;

export const PHYSICAL: Record<ColumnType, Physical> = {
  string: 'BYTE_ARRAY',
  json: 'BYTE_ARRAY',
  integer: 'INT64',
  timestamp: 'INT64',
  double: 'DOUBLE',
  boolean: 'BOOLEAN',
};

export interface ParquetColumn {
  name: string;
  type: ColumnType;
}

interface ChunkMeta {
  column: number;
  offset: number;
  rows: number;
  nulls: number;
  uncompressed: number;
  compressed: number;
  min?: Buffer;
  max?: Buffer;
}

/** Levels 0/1 as the RLE / bit-packed hybrid (bit width 1), prefixed by their byte length (page V1). */
export function encodeLevels(defs: Uint8Array, n: number): Buffer {
  const out = Buffer.allocUnsafe(8 + Math.ceil(n / 8) + Math.ceil(n / 8) * 2 + 16);
  let o = 4;
  const varint = (v: number) => {
    while (v >= 0x80) {
      out[o++] = (v % 0x80) + 0x80;
      v = Math.floor(v / 0x80);
    }
    out[o++] = v;
  };
  let i = 0;
  while (i < n) {
    let j = i + 1;
    while (j < n && defs[j] === defs[i]) j++;
    if (j - i >= 8 || j === n) {
      varint((j - i) * 2); // RLE run
      out[o++] = defs[i]!;
      i = j;
      continue;
    }
    // bit-packed groups of 8 until a run of 8 or more starts at a group boundary
    const start = i;
    let groups = 0;
    while (i < n) {
      if (groups > 0) {
        let k = i + 1;
        while (k < n && k - i < 8 && defs[k] === defs[i]) k++;
        if (k - i >= 8) break;
      }
      i += 8;
      groups++;
    }
    varint(groups * 2 + 1);
    for (let g = 0; g < groups; g++) {
      let b = 0;
      for (let bit = 0; bit < 8; bit++) {
        const at = start + g * 8 + bit;
        if (at < n && defs[at] === 1) b |= 1 << bit;
      }
      out[o++] = b;
    }
  }
  out.writeUInt32LE(o - 4, 0);
  return out.subarray(0, o);
}

/** BOOLEAN values (one byte each, in pieces) bit-packed, as PLAIN encodes them. */
function booleanValues(pieces: readonly Uint8Array[], n: number): Buffer {
  const out = Buffer.alloc(Math.ceil(n / 8));
  let i = 0;
  for (const p of pieces) for (let k = 0; k < p.length; k++, i++) if (p[k] === 1) out[i >> 3]! |= 1 << (i & 7);
  return out;
}

/** A column of a row group, however it was buffered: its levels, and its PLAIN values in pieces. */
interface ColumnRun {
  physical: Physical;
  defs: Uint8Array;
  values: Uint8Array[];
  valueBytes: number;
  nonNull: number;
  min: number;
  max: number;
}

let defsScratch = new Uint8Array(0);

let scratchBuf = Buffer.alloc(0);
let packedScratch = Buffer.alloc(0);

/**
 * Snappy (snappyjs's compressor, the same bytes as its compress()) into this thread's reusable
 * buffer, then copied out at the compressed size. compress() zero-filled a buffer of the worst
 * case (the input and a sixth more) per column chunk and returned a view of it, so the whole of it
 * stayed in memory until the row group was written: ~1.2x a row group's raw bytes per row group in
 * flight, against its compressed size here.
 */
export function snappyCompress(body: Uint8Array): Buffer {
  const c = new SnappyCompressor(body);
  const max = c.maxCompressedLength();
  if (packedScratch.length < max) packedScratch = Buffer.allocUnsafeSlow(Math.max(max, packedScratch.length * 2));
  const n = c.compressToBuffer(packedScratch);
  const out = Buffer.allocUnsafeSlow(n);
  packedScratch.copy(out, 0, 0, n);
  return out;
}

export class ParquetFileEncoder {
  private readonly columnBuilders: ColumnBuilder[];
  /**
   * Rows encoded elsewhere (a page's columns, format/chunk.ts), kept as they came until the row
   * group is written instead of copied into the builders: the page's buffers are exactly its
   * size, where builders grow by doubling, and a copy left the page's own buffers behind as
   * garbage. Only while the builders are empty, so rows stay in order.
   */
  private pending: ColumnSlice[][] = [];
  private pendingBytes = 0;
  /** Rows in the row group being built. */
  rows = 0;
  /** Bytes produced so far, the leading magic included (the next row group's file offset). */
  offset = MAGIC.length;
  private readonly groups: { rows: number; chunks: ChunkMeta[]; bytes: number; compressed: number; offset: number }[] = [];
  private readonly physical: Physical[];
  private totalRows = 0;

  constructor(readonly columns: ParquetColumn[]) {
    this.physical = columns.map((c) => PHYSICAL[c.type]);
    this.columnBuilders = this.physical.map((p) => new ColumnBuilder(p));
  }

  /** The builders to append rows to, one per column (rows kept as slices are moved into them first). */
  get builders(): ColumnBuilder[] {
    if (this.pending.length) {
      for (const set of this.pending) set.forEach((c, i) => this.columnBuilders[i]!.appendSlice(c));
      this.pending = [];
      this.pendingBytes = 0;
    }
    return this.columnBuilders;
  }

  /** Appends rows encoded elsewhere, one slice per column (kept, not copied, while no row is in the builders). */
  appendSlices(slices: ColumnSlice[]): void {
    if (this.columnBuilders[0]!.rows > 0) {
      slices.forEach((c, i) => this.columnBuilders[i]!.appendSlice(c));
      return;
    }
    this.pending.push(slices);
    for (const c of slices) this.pendingBytes += c.defs.length + c.data.length;
  }

  /** One reusable buffer per thread for a page body before compression (flushRowGroup is synchronous). */
  private scratch(n: number): Buffer {
    if (scratchBuf.length < n) scratchBuf = Buffer.allocUnsafeSlow(Math.max(n, scratchBuf.length * 2));
    return scratchBuf.subarray(0, n);
  }

  /** Bytes buffered in the row group being built. */
  get bufferedBytes(): number {
    let n = this.pendingBytes;
    for (const b of this.columnBuilders) n += b.byteSize;
    return n;
  }

  /** The file's first bytes (counted in `offset` from the start). */
  magic(): Buffer {
    return MAGIC;
  }

  /** Column `column` of the row group being built, from the builders or the kept slices. */
  private run(column: number, rows: number): ColumnRun {
    const c = this.columnBuilders[column]!;
    if (this.pending.length === 0)
      return {
        physical: c.physical,
        defs: c.defs,
        values: [c.data.subarray(0, c.used)],
        valueBytes: c.used,
        nonNull: c.nonNull,
        min: c.min,
        max: c.max,
      };
    if (defsScratch.length < rows) defsScratch = new Uint8Array(Math.max(rows, defsScratch.length * 2));
    const r: ColumnRun = { physical: c.physical, defs: defsScratch, values: [], valueBytes: 0, nonNull: 0, min: Infinity, max: -Infinity };
    let at = 0;
    for (const set of this.pending) {
      const s = set[column]!;
      defsScratch.set(s.defs, at);
      at += s.defs.length;
      r.values.push(s.data);
      r.valueBytes += s.data.length;
      r.nonNull += s.nonNull;
      if (s.min < r.min) r.min = s.min;
      if (s.max > r.max) r.max = s.max;
    }
    if (at !== rows) throw new Error(`parquet: column ${this.columns[column]!.name} has ${at} rows, expected ${rows}`);
    return r;
  }

  /** Encodes the buffered rows as one row group (nothing when there are none) and empties the builders. */
  flushRowGroup(): Buffer[] {
    const rows = this.rows;
    if (rows === 0) return [];
    const out: Buffer[] = [];
    const chunks: ChunkMeta[] = [];
    const groupOffset = this.offset;
    let bytes = 0;
    let compressed = 0;
    this.columnBuilders.forEach((b, column) => {
      if (this.pending.length === 0 && b.rows !== rows)
        throw new Error(`parquet: column ${this.columns[column]!.name} has ${b.rows} rows, expected ${rows}`);
      const c = this.run(column, rows);
      const levels = encodeLevels(c.defs, rows);
      const values = c.physical === 'BOOLEAN' ? [booleanValues(c.values, c.valueBytes)] : c.values;
      let size = levels.length;
      for (const v of values) size += v.length;
      const body = this.scratch(size);
      levels.copy(body, 0);
      let at = levels.length;
      for (const v of values) {
        body.set(v, at);
        at += v.length;
      }
      const packed = snappyCompress(body);
      const header = encodeStruct(
        struct([1, PAGE_DATA_V1], [2, body.length], [3, packed.length], [5, struct([1, rows], [2, ENC_PLAIN], [3, ENC_RLE], [4, ENC_RLE])]),
      );
      const meta: ChunkMeta = {
        column,
        offset: this.offset,
        rows,
        nulls: rows - c.nonNull,
        uncompressed: header.length + body.length,
        compressed: header.length + packed.length,
      };
      if ((c.physical === 'INT64' || c.physical === 'DOUBLE') && c.nonNull > 0) {
        meta.min = statBytes(c.physical, c.min);
        meta.max = statBytes(c.physical, c.max);
      }
      chunks.push(meta);
      out.push(header, packed);
      this.offset += meta.compressed;
      bytes += meta.uncompressed;
      compressed += meta.compressed;
      b.reset();
    });
    this.pending = [];
    this.pendingBytes = 0;
    this.groups.push({ rows, chunks, bytes, compressed, offset: groupOffset });
    this.totalRows += rows;
    this.rows = 0;
    return out;
  }

  /** Flushes what is buffered and returns the footer: the file's last bytes. */
  finish(): Buffer[] {
    const last = this.flushRowGroup();
    const schema: ThriftStruct[] = [struct([4, 'schema'], [5, this.columns.length])];
    this.columns.forEach((c, i) => {
      const text = c.type === 'string' || c.type === 'json';
      const ts = c.type === 'timestamp';
      schema.push(
        struct(
          [1, TYPE[this.physical[i]!]],
          [3, OPTIONAL],
          [4, c.name],
          [6, text ? CONVERTED_UTF8 : ts ? CONVERTED_TIMESTAMP_MICROS : undefined],
          [10, text ? struct([1, struct()]) : ts ? struct([8, struct([1, true], [2, struct([2, struct()])])]) : undefined],
        ),
      );
    });
    const rowGroups = this.groups.map((g) =>
      struct(
        [
          1,
          list(
            g.chunks.map((m) =>
              struct(
                [2, i64(m.offset)],
                [
                  3,
                  struct(
                    [1, TYPE[this.physical[m.column]!]],
                    [2, list([ENC_PLAIN, ENC_RLE])],
                    [3, list([this.columns[m.column]!.name])],
                    [4, CODEC_SNAPPY],
                    [5, i64(m.rows)],
                    [6, i64(m.uncompressed)],
                    [7, i64(m.compressed)],
                    [9, i64(m.offset)],
                    [12, struct([3, i64(m.nulls)], [5, m.max], [6, m.min])],
                  ),
                ],
              ),
            ),
          ),
        ],
        [2, i64(g.bytes)],
        [3, i64(g.rows)],
        [5, i64(g.offset)],
        [6, i64(g.compressed)],
      ),
    );
    const footer = encodeStruct(
      struct([1, 1], [2, list(schema)], [3, i64(this.totalRows)], [4, list(rowGroups)], [6, 'school-export (data page v1)']),
    );
    const tail = Buffer.allocUnsafe(8);
    tail.writeUInt32LE(footer.length, 0);
    MAGIC.copy(tail, 4);
    this.offset += footer.length + 8;
    return [...last, footer, tail];
  }
}
