import type { Physical } from './parquet/column.ts';

/**
 * Rows already encoded for a format, as plain bytes that can cross a thread boundary
 * (transferable) and be split at any row for file rollover. Text formats (NDJSON, CSV): the
 * rows' bytes and where each row ends. Parquet: per column the definition levels and the PLAIN
 * values of the rows (format/parquet/column.ts), appended to the writer's row group as they are.
 */
export interface TextChunk {
  kind: 'text';
  rows: number;
  bytes: Uint8Array;
  /** ends[i]: byte offset just past row i */
  ends: Uint32Array;
}

export interface ColumnSlice {
  physical: Physical;
  defs: Uint8Array;
  data: Uint8Array;
  nonNull: number;
  min: number;
  max: number;
}

export interface ColumnsChunk {
  kind: 'columns';
  rows: number;
  columns: ColumnSlice[];
}

export type EncodedChunk = TextChunk | ColumnsChunk;

/** Rows [from, to) of a chunk (views, no copy of text bytes). */
export function sliceChunk(chunk: EncodedChunk, from: number, to: number): EncodedChunk {
  to = Math.min(to, chunk.rows);
  if (from === 0 && to === chunk.rows) return chunk;
  if (chunk.kind === 'text') {
    const start = from === 0 ? 0 : chunk.ends[from - 1]!;
    const ends = chunk.ends.slice(from, to);
    for (let i = 0; i < ends.length; i++) ends[i]! -= start;
    return { kind: 'text', rows: to - from, bytes: chunk.bytes.subarray(start, chunk.ends[to - 1]!), ends };
  }
  return { kind: 'columns', rows: to - from, columns: chunk.columns.map((c) => sliceColumn(c, from, to)) };
}

/**
 * Successive slices of a columns chunk, front to back, in time proportional to the rows (each
 * value's length is read once), for callers that cut a chunk at many rows.
 */
export class ColumnsCursor {
  private row = 0;
  private readonly offsets: number[];
  constructor(private readonly chunk: ColumnsChunk) {
    this.offsets = chunk.columns.map(() => 0);
  }

  /** The next `n` rows. */
  next(n: number): ColumnSlice[] {
    const from = this.row;
    const to = Math.min(this.chunk.rows, from + n);
    this.row = to;
    if (from === 0 && to === this.chunk.rows) return this.chunk.columns;
    return this.chunk.columns.map((c, i) => {
      let values = 0;
      for (let r = from; r < to; r++) values += c.defs[r]!;
      const start = this.offsets[i]!;
      let end = start;
      if (c.physical === 'BYTE_ARRAY') {
        const view = Buffer.from(c.data.buffer, c.data.byteOffset, c.data.byteLength);
        for (let k = 0; k < values; k++) end += 4 + view.readUInt32LE(end);
      } else end += values * (c.physical === 'BOOLEAN' ? 1 : 8);
      this.offsets[i] = end;
      return columnSlice(c, from, to, start, end, values);
    });
  }
}

function columnSlice(c: ColumnSlice, from: number, to: number, start: number, end: number, values: number): ColumnSlice {
  const data = c.data.subarray(start, end);
  let min = Infinity;
  let max = -Infinity;
  if (c.physical === 'INT64' || c.physical === 'DOUBLE') {
    // statistics are exact per row group, so a slice's own min/max are recomputed
    const view = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    for (let o = 0; o < data.length; o += 8) {
      const v = c.physical === 'DOUBLE' ? view.readDoubleLE(o) : view.readInt32LE(o + 4) * 4294967296 + view.readUInt32LE(o);
      if (v < min) min = v;
      if (v > max) max = v;
    }
  }
  return { physical: c.physical, defs: c.defs.subarray(from, to), data, nonNull: values, min, max };
}

/** Byte offset of the value of row `row` in a column's PLAIN data (walks the rows before it). */
function valueOffset(c: ColumnSlice, row: number): { offset: number; values: number } {
  let values = 0;
  for (let i = 0; i < row; i++) values += c.defs[i]!;
  if (c.physical !== 'BYTE_ARRAY') return { offset: values * (c.physical === 'BOOLEAN' ? 1 : 8), values };
  const view = Buffer.from(c.data.buffer, c.data.byteOffset, c.data.byteLength);
  let offset = 0;
  for (let i = 0; i < values; i++) offset += 4 + view.readUInt32LE(offset);
  return { offset, values };
}

function sliceColumn(c: ColumnSlice, from: number, to: number): ColumnSlice {
  const a = valueOffset(c, from);
  const b = valueOffset(c, to);
  return columnSlice(c, from, to, a.offset, b.offset, b.values - a.values);
}

/** Bytes of the longest row of a text chunk (0 for an empty one). */
export function longestRow(chunk: TextChunk): number {
  let max = 0;
  let start = 0;
  const ends = chunk.ends;
  for (let i = 0; i < chunk.rows; i++) {
    const end = ends[i]!;
    if (end - start > max) max = end - start;
    start = end;
  }
  return max;
}

/** The ArrayBuffers a chunk's views live in, to transfer them to another thread. */
export function chunkBuffers(chunk: EncodedChunk): ArrayBuffer[] {
  const views = chunk.kind === 'text' ? [chunk.bytes, chunk.ends] : chunk.columns.flatMap((c) => [c.defs, c.data]);
  return [...new Set(views.map((v) => v.buffer as ArrayBuffer))];
}
