// Minimal typings for snappyjs (untyped CommonJS): the compressor format/parquet/file.ts uses.
declare module 'snappyjs' {
  const snappy: { compress<T extends Uint8Array | ArrayBuffer>(input: T): T; uncompress<T extends Uint8Array | ArrayBuffer>(input: T): T };
  export default snappy;
}

// The compressor itself, to compress into a buffer of our own (format/parquet/file.ts, snappyCompress).
declare module 'snappyjs/snappy_compressor.js' {
  export class SnappyCompressor {
    constructor(input: Uint8Array);
    maxCompressedLength(): number;
    compressToBuffer(out: Uint8Array): number;
  }
}
