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
    readonly fields: Record<string, unknown>;
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
    write: (buf: Buffer) => Promise<void>;
    writeFooter(userMetadata?: Record<string, string>): Promise<void>;
  }
  const parquet: {
    ParquetSchema: typeof ParquetSchema;
    ParquetWriter: typeof ParquetWriter;
    ParquetEnvelopeWriter: typeof ParquetEnvelopeWriter;
  };
  export default parquet;
}

declare module 'parquetjs-lite/gen-nodejs/parquet_types.js' {
  // Thrift-generated classes; only what parquet-footer.ts touches is typed.
  interface SchemaElement {
    name: string;
    converted_type: number | null;
    logicalType: unknown;
  }
  interface FileMetaData {
    schema: SchemaElement[];
  }
  type Ctor<T = unknown> = new (args?: Record<string, unknown>) => T;
  const thrift: {
    ConvertedType: Record<string, number>;
    FileMetaData: Ctor<FileMetaData>;
    LogicalType: Ctor;
    TimestampType: Ctor;
    TimeUnit: Ctor;
    MicroSeconds: Ctor;
    StringType: Ctor;
  };
  export default thrift;
}

declare module 'parquetjs-lite/lib/util.js' {
  const util: {
    decodeThrift(obj: unknown, buf: Buffer, offset?: number): number;
    serializeThrift(obj: unknown): Buffer;
  };
  export default util;
}
