import type { Writable } from 'node:stream';
import { EXTRA_COLUMN, type ColumnType, type Row, type Scalar, type TableSchema } from '../../table.ts';
import { declaredColumns, extraJson } from '../extra.ts';
import { endStream, writeChunk } from '../write-stream.ts';
import type { FormatWriter } from '../types.ts';
import { ColumnsCursor, type ColumnsChunk, type EncodedChunk } from '../chunk.ts';
import type { ColumnBuilder } from './column.ts';
import { ParquetFileEncoder, type ParquetColumn } from './file.ts';
import { isoMicros, typeMismatch } from './values.ts';

/**
 * The built-in Parquet writer (`--parquet-writer builtin`, the default): rows go column by column
 * straight into bytes (format/parquet/column.ts), a row group is written when it holds
 * `rowGroupRows` rows or `rowGroupBytes` bytes, whichever comes first, so memory stays bounded
 * whatever the row size. Pure JavaScript (snappyjs for compression): nothing a platform may lack.
 */
export const DEFAULT_ROW_GROUP_ROWS = 10_000;
// 512 KiB: a run builds one row group per table per task at once (12 at 4 schools of three
// tables). At 2 MiB they were ~20 MB of a 120,000-row export's peak RSS (wide shape); from 1 MiB
// to 512 KiB the peak went from 208 to 198 MB (medians of 4 interleaved runs, --workers 0, with
// row groups kept as their pages' exact-size columns), at no cost in CPU.
export const DEFAULT_ROW_GROUP_BYTES = 512 * 1024;

/** The Parquet columns of a schema: declared columns, then `_extra` (added when the schema lacks it). */
export function parquetColumns(schema: TableSchema): ParquetColumn[] {
  const { columns } = declaredColumns(schema);
  return [...columns.map((c) => ({ name: c.name, type: c.type })), { name: EXTRA_COLUMN.name, type: 'json' as const }];
}

/** Appends one value to its column, converting from the flattened row's representation. */
export function appendValue(b: ColumnBuilder, v: Scalar | undefined, type: ColumnType, col: string): void {
  if (v === null || v === undefined) return b.null();
  switch (type) {
    case 'timestamp': {
      const us = typeof v === 'string' ? isoMicros(v) : NaN;
      if (Number.isNaN(us)) throw typeMismatch(col, v, 'an ISO 8601 UTC timestamp');
      return b.int64(us);
    }
    case 'integer':
      if (typeof v === 'number' && Number.isSafeInteger(v)) return b.int64(v);
      throw typeMismatch(col, v, 'an integer');
    case 'double':
      if (typeof v === 'number') return b.double(v);
      throw typeMismatch(col, v, 'a number');
    case 'boolean':
      return b.boolean(v === true || v === 'true');
    default:
      return b.string(typeof v === 'string' ? v : String(v));
  }
}

function chunkBytes(chunk: ColumnsChunk): number {
  let n = 0;
  for (const c of chunk.columns) n += c.defs.length + c.data.length;
  return n;
}

export interface RowGroupLimits {
  rows: number;
  bytes: number;
}

export class BuiltinParquetWriter implements FormatWriter {
  rowsWritten = 0;
  bytesWritten = 0;
  private readonly enc: ParquetFileEncoder;
  private readonly names: string[];
  private readonly types: ColumnType[];
  private readonly isDeclared: Set<string>;
  private started = false;

  constructor(
    schema: TableSchema,
    private readonly out: Writable,
    private readonly limits: RowGroupLimits,
  ) {
    const cols = parquetColumns(schema);
    this.enc = new ParquetFileEncoder(cols);
    this.names = cols.slice(0, -1).map((c) => c.name);
    this.types = cols.slice(0, -1).map((c) => c.type);
    this.isDeclared = declaredColumns(schema).isDeclared;
    this.isDeclared.add(EXTRA_COLUMN.name);
  }

  /** The encoder, for callers that fill columns themselves (generated serialisers) and then call rowsAppended(). */
  get encoder(): ParquetFileEncoder {
    return this.enc;
  }

  async write(rows: Row[]): Promise<void> {
    const { names, types } = this;
    const b = this.enc.builders;
    const extraCol = b[names.length]!;
    for (const row of rows) {
      for (let i = 0; i < names.length; i++) appendValue(b[i]!, row[names[i]!], types[i]!, names[i]!);
      const extra = extraJson(row, this.isDeclared);
      if (extra === null) extraCol.null();
      else extraCol.string(extra);
      if (this.rowAppended()) await this.emit(this.enc.flushRowGroup());
    }
  }

  /** Counts a row appended to the encoder's columns; true when the row group is full and must be written. */
  rowAppended(): boolean {
    this.rowsWritten++;
    const n = ++this.enc.rows;
    return n >= this.limits.rows || ((n & 63) === 0 && this.enc.bufferedBytes >= this.limits.bytes);
  }

  /**
   * Rows encoded elsewhere, appended in pieces that end where write() would check the row-group
   * limits (every 64 rows, and at `limits.rows`), so both paths cut row groups at the same rows
   * and produce the same bytes.
   */
  async writeEncoded(chunk: EncodedChunk): Promise<void> {
    if (chunk.kind !== 'columns' || chunk.columns.length !== this.enc.columns.length)
      throw new Error('parquet: expected column rows of this table');
    const cursor = new ColumnsCursor(chunk);
    let at = 0;
    while (at < chunk.rows) {
      const n = this.enc.rows;
      // the whole chunk when no limit can be reached inside it (the usual case), else up to the next check
      const boundary = Math.min(this.limits.rows, (Math.floor(n / 64) + 1) * 64);
      const mayFlush = n + (chunk.rows - at) >= this.limits.rows || this.enc.bufferedBytes + chunkBytes(chunk) >= this.limits.bytes;
      const take = mayFlush ? Math.min(boundary - n, chunk.rows - at) : chunk.rows - at;
      this.enc.appendSlices(cursor.next(take));
      at += take;
      this.rowsWritten += take;
      this.enc.rows += take;
      const rows = this.enc.rows;
      if (rows >= this.limits.rows || ((rows & 63) === 0 && this.enc.bufferedBytes >= this.limits.bytes)) await this.flushRowGroup();
    }
  }

  /** Writes the buffered row group now. */
  async flushRowGroup(): Promise<void> {
    await this.emit(this.enc.flushRowGroup());
  }

  private async emit(bufs: Buffer[]): Promise<void> {
    if (!this.started) {
      this.started = true;
      bufs = [this.enc.magic(), ...bufs];
    }
    // piece by piece: no copy of the whole row group
    for (const b of bufs) {
      this.bytesWritten += b.length;
      await writeChunk(this.out, b);
    }
  }

  async finish(): Promise<void> {
    await this.emit(this.enc.finish());
    await endStream(this.out);
  }
}
