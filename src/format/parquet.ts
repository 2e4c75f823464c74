/**
 * The Parquet format. Two encoders behind one Format: `builtin` (the default; format/parquet/
 * writer.ts: columns straight into bytes, data page V1, snappy, row groups bounded by rows and
 * bytes) and `parquetjs-lite` (format/parquet/lite.ts, the library used before; slower, kept
 * selectable with --parquet-writer). Both write the same logical types and read back equal.
 */
import type { Writable } from 'node:stream';
import type { Row, TableSchema } from '../table.ts';
import type { Format, FormatOptions, FormatWriter } from './types.ts';
import { BuiltinParquetWriter, DEFAULT_ROW_GROUP_BYTES, DEFAULT_ROW_GROUP_ROWS } from './parquet/writer.ts';
import type { LiteParquetWriter } from './parquet/lite.ts';

export const PARQUET_WRITERS = ['builtin', 'parquetjs-lite'] as const;
export type ParquetWriterName = (typeof PARQUET_WRITERS)[number];

function open(schema: TableSchema, out: Writable, opts: FormatOptions): FormatWriter {
  const rows = Math.max(1, Math.floor(opts.rowGroupRows ?? DEFAULT_ROW_GROUP_ROWS));
  if (opts.parquetWriter === 'parquetjs-lite') return new LazyLiteWriter(() => import('./parquet/lite.ts'), schema, out, rows);
  return new BuiltinParquetWriter(schema, out, { rows, bytes: opts.rowGroupBytes ?? DEFAULT_ROW_GROUP_BYTES });
}

/**
 * parquetjs-lite (and the thrift code under it) is loaded when a file is first written with it:
 * loading it with the registry was ~15% of the start-up of every run, whatever the format.
 */
class LazyLiteWriter implements FormatWriter {
  private writer: LiteParquetWriter | undefined;
  private loading: Promise<LiteParquetWriter> | undefined;

  constructor(
    private readonly load: () => Promise<typeof import('./parquet/lite.ts')>,
    private readonly schema: TableSchema,
    private readonly out: Writable,
    private readonly rows: number,
  ) {}

  private get(): Promise<LiteParquetWriter> {
    this.loading ??= this.load().then((m) => (this.writer = new m.LiteParquetWriter(this.schema, this.out, this.rows)));
    return this.loading;
  }

  get rowsWritten(): number {
    return this.writer?.rowsWritten ?? 0;
  }

  get bytesWritten(): number {
    return this.writer?.bytesWritten ?? 0;
  }

  async write(rows: Row[]): Promise<void> {
    await (await this.get()).write(rows);
  }

  async finish(): Promise<void> {
    await (await this.get()).finish();
  }
}

export const parquetFormat = {
  name: 'parquet',
  workersToGain: 1,
  // what the pool's workers have (src/encode/pool.ts). Measured, the wide shape (4 schools x 30,000
  // achievements), 3 interleaved pairs on Node 20: with --workers 0 peak RSS 210-213 -> 172-184 MB,
  // CPU +1% on average; with the default pool 190-197 -> 188-199 MB, CPU alike (the cap steps aside
  // once the worker starts: src/cli/heap.ts). Node 24, --workers 0: 255-265 -> 232 MB. An
  // incremental night of 1,000 small schools: 171-175 -> 146-148 MB, CPU a school alike (23.6-36.2
  // against 26.9-32.8 ms, 3 pairs on a noisy machine).
  youngGenerationMb: 8,
  extension: () => 'parquet',
  open,
} as const satisfies Format;

export { DEFAULT_ROW_GROUP_ROWS, DEFAULT_ROW_GROUP_BYTES };
export { isoToMicros, isoMicros } from './parquet/values.ts';
