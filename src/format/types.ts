import type { Writable } from 'node:stream';
import type { Row, TableSchema } from '../table.ts';
import type { EncodedChunk } from './chunk.ts';

export interface FormatWriter {
  /** Encode and write a batch; resolves once `out` accepted it (backpressure respected). */
  write(rows: Row[]): Promise<void>;
  /**
   * Write rows already encoded for this format (generated serialisers, worker threads): the same
   * bytes write() would produce for the same rows. Absent when the writer cannot take them
   * (parquetjs-lite); callers then use write().
   */
  writeEncoded?(chunk: EncodedChunk): Promise<void>;
  /** Flush buffered data and end `out`; resolves when `out` has finished. */
  finish(): Promise<void>;
  readonly rowsWritten: number;
  /** Bytes handed to `out` (after compression). */
  readonly bytesWritten: number;
  /**
   * Text formats: bytes of the longest line written so far (CSV: record, the header included),
   * its line end included, before compression. What a loader's line limit must allow
   * (ManifestFile.max_line_bytes). Absent for formats without lines.
   */
  readonly maxLineBytes?: number;
}

export interface FormatOptions {
  /** NDJSON only: gzip the stream (extension ndjson.gz). */
  gzip?: boolean;
  /** CSV only: prefix ' to text cells starting with = + - @ TAB CR (spreadsheet formula injection). Default off. */
  csvFormulaGuard?: boolean;
  /** Parquet only: rows per row group. Default 10,000. */
  rowGroupRows?: number;
  /** Parquet only (built-in writer): bytes buffered per row group, whichever limit comes first. Default 512 KiB. */
  rowGroupBytes?: number;
  /** Parquet only: the encoder, 'builtin' (default) or 'parquetjs-lite'. */
  parquetWriter?: 'builtin' | 'parquetjs-lite';
}

/**
 * One output format. Each format file exports one of these with a literal `name`
 * (`satisfies Format`), and index.ts lists it in FORMATS: the names used by config validation,
 * the CLI's choices and the types all derive from that list.
 */
export interface Format {
  readonly name: string;
  /**
   * The fewest worker threads that encode this format faster than the main thread alone: the
   * default pool starts none when the machine has fewer CPUs to spare (src/encode/pool.ts,
   * defaultWorkers). Measured on a 2-core VM (bench row 2c, page work): one worker encoded NDJSON
   * and CSV slower than the main thread alone, two faster; Parquet's heavier encoding gains from one.
   */
  readonly workersToGain: number;
  /**
   * The young generation (MB) a run that writes this format caps its main thread at once it reads
   * a large page, where it differs from the process's (src/cli/heap.ts). Measured at 8 MB on the
   * wide shape: Parquet's peak RSS fell by 30-40 MB at the same CPU; NDJSON's and CSV's CPU rose
   * by 9-31%, so they keep the process's.
   */
  readonly youngGenerationMb?: number;
  extension(opts: FormatOptions): string;
  open(schema: TableSchema, out: Writable, opts: FormatOptions): FormatWriter;
}
