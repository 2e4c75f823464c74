// Minimal typings for snappyjs (untyped CommonJS): the compressor format/parquet/file.ts uses.
declare module 'snappyjs' {
  const snappy: { compress<T extends Uint8Array | ArrayBuffer>(input: T): T; uncompress<T extends Uint8Array | ArrayBuffer>(input: T): T };
  export default snappy;
}
