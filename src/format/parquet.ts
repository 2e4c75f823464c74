/**
 * The Parquet format. Two encoders behind one Format: `builtin` (the default; format/parquet/
 * writer.ts: columns straight into bytes, data page V1, snappy, row groups bounded by rows and
 * bytes) and `parquetjs-lite` (format/parquet/lite.ts, the library used before; slower, kept
 * selectable with --parquet-writer). Both write the same logical types and read back equal.
 */
import type { Writable } from 'node:stream';
import type { TableSchema } from '../table.ts';
import type { Format, FormatOptions, FormatWriter } from './types.ts';
import { BuiltinParquetWriter, DEFAULT_ROW_GROUP_BYTES, DEFAULT_ROW_GROUP_ROWS } from './parquet/writer.ts';
import { LiteParquetWriter } from './parquet/lite.ts';

export const PARQUET_WRITERS = ['builtin', 'parquetjs-lite'] as const;
export type ParquetWriterName = (typeof PARQUET_WRITERS)[number];

function open(schema: TableSchema, out: Writable, opts: FormatOptions): FormatWriter {
  const rows = Math.max(1, Math.floor(opts.rowGroupRows ?? DEFAULT_ROW_GROUP_ROWS));
  if (opts.parquetWriter === 'parquetjs-lite') return new LiteParquetWriter(schema, out, rows);
  return new BuiltinParquetWriter(schema, out, { rows, bytes: opts.rowGroupBytes ?? DEFAULT_ROW_GROUP_BYTES });
}

export const parquetFormat = {
  name: 'parquet',
  extension: () => 'parquet',
  open,
} as const satisfies Format;

export { DEFAULT_ROW_GROUP_ROWS, DEFAULT_ROW_GROUP_BYTES };
export { isoToMicros, isoMicros } from './parquet/values.ts';
