// Minimal typings for the parts of parquetjs-lite (untyped CommonJS) that format/parquet.ts uses.
declare module 'parquetjs-lite' {
  import type { Writable } from 'node:stream';
  export interface ParquetFieldOptions {
    type: string;
    optional?: boolean;
    compression?: 'UNCOMPRESSED' | 'GZIP' | 'SNAPPY';
    encoding?: string;
    statistics?: boolean;
  }
  export class ParquetSchema {
    constructor(fields: Record<string, ParquetFieldOptions>);
  }
  export interface ParquetWriterOptions {
    rowGroupSize?: number;
    pageSize?: number;
    useDataPageV2?: boolean;
    pageIndex?: boolean;
  }
  export class ParquetWriter {
    constructor(schema: ParquetSchema, envelopeWriter: ParquetEnvelopeWriter, opts: ParquetWriterOptions);
    static openStream(schema: ParquetSchema, out: Writable, opts?: ParquetWriterOptions): Promise<ParquetWriter>;
    appendRow(row: Record<string, unknown>): Promise<void>;
    close(): Promise<void>;
    setMetadata(key: string, value: string): void;
    envelopeWriter: { offset: number };
  }
  export class ParquetEnvelopeWriter {
    constructor(
      schema: ParquetSchema,
      writeFn: (buf: Buffer) => Promise<void>,
      closeFn: () => Promise<void>,
      fileOffset: number,
      opts: ParquetWriterOptions,
    );
    offset: number;
  }
  const parquet: {
    ParquetSchema: typeof ParquetSchema;
    ParquetWriter: typeof ParquetWriter;
    ParquetEnvelopeWriter: typeof ParquetEnvelopeWriter;
  };
  export default parquet;
}
