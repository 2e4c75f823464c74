import type { Writable } from 'node:stream';
import parquet from 'parquetjs-lite';
import type { ParquetFieldOptions, ParquetWriter } from 'parquetjs-lite';
import { ExportError } from '../../errors.ts';
import { EXTRA_COLUMN, type ColumnType, type Row, type Scalar, type TableSchema } from '../../table.ts';
import { declaredColumns, extraJson } from '../extra.ts';
import { endStream } from '../write-stream.ts';
import { withLogicalTypes } from './lite-footer.ts';
import { flushRowGroup, newColumns, type ColumnBuffer } from './lite-columns.ts';
import { isoToMicros, typeMismatch } from './values.ts';
import type { FormatWriter } from '../types.ts';

/**
 * Parquet through parquetjs-lite (`--parquet-writer parquetjs-lite`; the default is the built-in writer).
 * Every column OPTIONAL; data page V1 (the library defaults to V2, which some warehouse loaders
 * reject); snappy; row groups of `rowGroupRows` rows (the only rows held in memory).
 * Timestamps are INT64 microseconds since the epoch, typed TIMESTAMP(isAdjustedToUTC=true, MICROS)
 * (logical type, added to the footer by lite-footer.ts) and TIMESTAMP_MICROS (converted type).
 */
const PARQUET_TYPE: Record<ColumnType, string> = {
  string: 'UTF8',
  json: 'UTF8',
  integer: 'INT64',
  double: 'DOUBLE',
  boolean: 'BOOLEAN',
  timestamp: 'TIMESTAMP_MICROS',
};

function parquetValue(v: Scalar | undefined, type: ColumnType, col: string): unknown {
  if (v === null || v === undefined) return null;
  switch (type) {
    case 'timestamp': {
      const us = typeof v === 'string' ? isoToMicros(v) : null;
      if (us === null || us < 0n) {
        // parquetjs-lite cannot encode instants before 1970; refuse loudly rather than write a wrong value
        throw new ExportError('E_DATA', `column ${col}: cannot write timestamp ${JSON.stringify(v)} to Parquet`);
      }
      return us;
    }
    case 'integer':
      if (typeof v === 'number' && Number.isSafeInteger(v)) return v;
      throw typeMismatch(col, v, 'an integer');
    case 'double':
      if (typeof v === 'number') return v;
      throw typeMismatch(col, v, 'a number');
    case 'boolean':
      return v === true || v === 'true';
    default:
      return typeof v === 'string' ? v : String(v);
  }
}

// parquetjs-lite compares strings in UTF-16 order, not the byte order readers assume for
// min/max pruning: no statistics on text rather than wrong ones.
function hasStatistics(t: ColumnType): boolean {
  return t !== 'string' && t !== 'json';
}

export function parquetSchema(schema: TableSchema): InstanceType<typeof parquet.ParquetSchema> {
  const fields: Record<string, ParquetFieldOptions> = {};
  for (const c of schema.columns) {
    fields[c.name] = {
      type: PARQUET_TYPE[c.type],
      optional: true,
      compression: 'SNAPPY',
      statistics: hasStatistics(c.type),
    };
  }
  return new parquet.ParquetSchema(fields);
}

/** A failure of the encoder library itself (not a type mismatch in our data). */
function sinkError(what: string, cause: unknown): ExportError {
  return new ExportError('E_SINK', `${what}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
}

function observed<T>(p: Promise<T>): Promise<T> {
  p.catch(() => {});
  return p;
}

export class LiteParquetWriter implements FormatWriter {
  rowsWritten = 0;
  private bytes = 0;
  private readonly writer: ParquetWriter;
  private readonly types: ColumnType[];
  private readonly names: string[];
  private readonly withStats: boolean[];
  private readonly isDeclared: Set<string>;
  private readonly hasExtra: boolean;
  private cols: ColumnBuffer[];
  private buffered = 0;

  constructor(
    given: TableSchema,
    out: Writable,
    private readonly rowGroupRows: number,
  ) {
    // drift always has a place to go, even for a schema built without `_extra`
    const schema = given.columns.some((c) => c.name === EXTRA_COLUMN.name)
      ? given
      : { ...given, columns: [...given.columns, EXTRA_COLUMN] };
    const { columns, isDeclared } = declaredColumns(schema);
    this.names = columns.map((c) => c.name);
    this.types = columns.map((c) => c.type);
    this.isDeclared = isDeclared;
    this.hasExtra = columns.length !== schema.columns.length;
    const all = this.hasExtra ? [...this.names, EXTRA_COLUMN.name] : this.names;
    const allTypes: ColumnType[] = this.hasExtra ? [...this.types, 'json'] : this.types;
    this.withStats = allTypes.map(hasStatistics);
    this.cols = newColumns(all, this.withStats);
    const pschema = parquetSchema(schema);
    const opts = { rowGroupSize: rowGroupRows, useDataPageV2: false };
    // Our own write/close functions: the library fires its header write without awaiting it, so
    // every promise we hand it is pre-observed (no unhandled rejection); the error still reaches
    // whoever awaits it (appendRow/close), and out.write's callback is the backpressure.
    const write = (buf: Buffer) => {
      this.bytes += buf.length;
      return observed(new Promise<void>((res, rej) => out.write(buf, (e) => (e ? rej(e) : res()))));
    };
    const close = () => observed(endStream(out));
    const envelope = new parquet.ParquetEnvelopeWriter(pschema, write, close, 0, opts);
    // The footer is the envelope's last write: amend it with logical types on the way out.
    const writeFooter = envelope.writeFooter.bind(envelope);
    envelope.writeFooter = (userMetadata) => {
      envelope.write = (buf: Buffer) => write(withLogicalTypes(buf));
      return writeFooter(userMetadata);
    };
    this.writer = new parquet.ParquetWriter(pschema, envelope, opts);
  }

  /** Bytes handed to `out` (the envelope's own offset does not see the amended footer). */
  get bytesWritten(): number {
    return this.bytes;
  }

  async write(rows: Row[]): Promise<void> {
    const w = this.writer;
    const { names, types } = this;
    for (const row of rows) {
      const cols = this.cols;
      for (let i = 0; i < names.length; i++) {
        const v = parquetValue(row[names[i]], types[i], names[i]);
        const c = cols[i];
        if (v === null) c.dlevels.push(0);
        else {
          c.dlevels.push(1);
          c.values.push(v);
          if (c.distinct !== null) c.distinct.add(v);
        }
      }
      if (this.hasExtra) {
        const extra = extraJson(row, this.isDeclared);
        const c = cols[names.length];
        if (extra === null) c.dlevels.push(0);
        else {
          c.dlevels.push(1);
          c.values.push(extra);
        }
      }
      this.rowsWritten++;
      if (++this.buffered >= this.rowGroupRows) await this.flush(w);
    }
  }

  private async flush(w: ParquetWriter): Promise<void> {
    const cols = this.cols;
    const n = this.buffered;
    this.cols = newColumns(
      cols.map((c) => c.name),
      this.withStats,
    );
    this.buffered = 0;
    try {
      await flushRowGroup(w, cols, n);
    } catch (e) {
      throw e instanceof ExportError ? e : sinkError('parquet encoding failed', e);
    }
  }

  async finish(): Promise<void> {
    const w = this.writer;
    await this.flush(w);
    try {
      await w.close(); // writes the footer, then ends `out`
    } catch (e) {
      throw sinkError('parquet close failed', e);
    }
  }
}
