import type { Writable } from 'node:stream';
import parquet from 'parquetjs-lite';
import type { ParquetFieldOptions, ParquetWriter } from 'parquetjs-lite';
import { ExportError } from '../errors.ts';
import type { ColumnType, Row, Scalar, TableSchema } from '../table.ts';
import { declaredColumns, extraJson, sinkError } from './io.ts';
import type { Format, FormatWriter } from './types.ts';

/**
 * Parquet through parquetjs-lite, kept behind the Format interface so the encoder can be swapped.
 * Every column OPTIONAL; data page V1 (the library defaults to V2, which some warehouse loaders
 * reject); snappy; row groups of `rowGroupRows` rows (the only rows held in memory).
 * Timestamps are INT64 with converted type TIMESTAMP_MICROS, which the Parquet spec defines as
 * UTC-adjusted microseconds since the epoch.
 */
const PARQUET_TYPE: Record<ColumnType, string> = {
  string: 'UTF8',
  json: 'UTF8',
  integer: 'INT64',
  double: 'DOUBLE',
  boolean: 'BOOLEAN',
  timestamp: 'TIMESTAMP_MICROS',
};

export const DEFAULT_ROW_GROUP_ROWS = 10_000;

const ISO_RE = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?Z$/;

/** '2024-03-31T00:30:00.123456Z' -> 1711845000123456n (microseconds since the epoch, UTC). */
export function isoToMicros(s: string): bigint {
  const m = ISO_RE.exec(s);
  const ms = m ? Date.parse(m[1] + 'Z') : NaN;
  if (!m || Number.isNaN(ms)) throw new ExportError('E_SINK', `not an ISO 8601 UTC timestamp: ${JSON.stringify(s).slice(0, 40)}`);
  const frac = m[2] ? Number((m[2] + '00000').slice(0, 6)) : 0;
  return BigInt(ms) * 1000n + BigInt(frac);
}

function parquetValue(v: Scalar | undefined, type: ColumnType, col: string): unknown {
  if (v === null || v === undefined) return null;
  switch (type) {
    case 'timestamp': {
      const us = typeof v === 'string' ? isoToMicros(v) : null;
      if (us === null || us < 0n) {
        // parquetjs-lite cannot encode instants before 1970; refuse loudly rather than write a wrong value
        throw new ExportError('E_SINK', `column ${col}: cannot write timestamp ${JSON.stringify(v)} to Parquet`);
      }
      return us;
    }
    case 'integer':
      if (typeof v === 'number' && Number.isSafeInteger(v)) return v;
      throw new ExportError('E_SINK', `column ${col}: ${JSON.stringify(v)} is not an integer`);
    case 'double':
      if (typeof v === 'number') return v;
      throw new ExportError('E_SINK', `column ${col}: ${JSON.stringify(v)} is not a number`);
    case 'boolean':
      return v === true || v === 'true';
    default:
      return typeof v === 'string' ? v : String(v);
  }
}

export function parquetSchema(schema: TableSchema): InstanceType<typeof parquet.ParquetSchema> {
  const fields: Record<string, ParquetFieldOptions> = {};
  for (const c of schema.columns) {
    fields[c.name] = {
      type: PARQUET_TYPE[c.type],
      optional: true,
      compression: 'SNAPPY',
      // parquetjs-lite compares strings in UTF-16 order, not the byte order readers assume for
      // min/max pruning: no statistics on text rather than wrong ones.
      statistics: c.type !== 'string' && c.type !== 'json',
    };
  }
  return new parquet.ParquetSchema(fields);
}

class ParquetFormatWriter implements FormatWriter {
  rowsWritten = 0;
  private writer: ParquetWriter | null = null;
  private readonly opening: Promise<ParquetWriter>;
  private readonly cols: { name: string; type: ColumnType }[];
  private readonly isDeclared: Set<string>;
  private readonly hasExtra: boolean;

  constructor(schema: TableSchema, out: Writable, rowGroupRows: number) {
    const { columns, isDeclared } = declaredColumns(schema);
    this.cols = columns.map((c) => ({ name: c.name, type: c.type }));
    this.isDeclared = isDeclared;
    this.hasExtra = columns.length !== schema.columns.length;
    this.opening = parquet.ParquetWriter.openStream(parquetSchema(schema), out, {
      rowGroupSize: rowGroupRows,
      useDataPageV2: false,
    });
    this.opening.catch(() => {}); // surfaced by the first write()/finish()
  }

  get bytesWritten(): number {
    return this.writer?.envelopeWriter.offset ?? 0;
  }

  private async open(): Promise<ParquetWriter> {
    this.writer ??= await this.opening;
    return this.writer;
  }

  async write(rows: Row[]): Promise<void> {
    const w = await this.open();
    const cols = this.cols;
    for (const row of rows) {
      const rec: Record<string, unknown> = {};
      for (let i = 0; i < cols.length; i++) rec[cols[i].name] = parquetValue(row[cols[i].name], cols[i].type, cols[i].name);
      if (this.hasExtra) rec._extra = extraJson(row, this.isDeclared);
      try {
        await w.appendRow(rec);
      } catch (e) {
        throw e instanceof ExportError ? e : sinkError('parquet encoding failed', e);
      }
      this.rowsWritten++;
    }
  }

  async finish(): Promise<void> {
    const w = await this.open();
    try {
      await w.close(); // writes the last row group and the footer, then ends `out`
    } catch (e) {
      throw sinkError('parquet close failed', e);
    }
  }
}

export const parquetFormat: Format = {
  name: 'parquet',
  extension: () => 'parquet',
  open: (schema, out, opts) => new ParquetFormatWriter(schema, out, opts.rowGroupRows ?? DEFAULT_ROW_GROUP_ROWS),
};
