import type { Writable } from 'node:stream';

/**
 * One output file on its way to the destination. Nothing is visible at the final path until
 * commit() resolves; abort() (or a failed commit) leaves nothing behind, not even a temp file
 * or an incomplete multipart upload.
 */
export interface SinkFile {
  /** Write the file's bytes here, respecting backpressure. */
  readonly stream: Writable;
  /** Ends the stream if not ended, makes the file durable and visible at its final path; only then resolves. */
  commit(): Promise<{ bytes: number; sha256: string }>;
  /** Discards the file. Idempotent; a no-op after a successful commit. */
  abort(): Promise<void>;
}

export interface Sink {
  /** 'file:///abs/dir' or 's3://bucket/prefix': for messages and manifests. Never carries credentials. */
  readonly url: string;
  /** relPath like 'achievements/region=uk/school_id=A1/RUN-0001.parquet' ('/' separators). */
  openFile(relPath: string): Promise<SinkFile>;
  /** Small files (state, manifests), replaced atomically. */
  writeAtomic(relPath: string, data: string | Buffer): Promise<void>;
  /** The file's bytes, or undefined when absent. */
  read(relPath: string): Promise<Buffer | undefined>;
  /** Relative paths of committed files whose path starts with prefix ('' for all), sorted. */
  list(prefix: string): Promise<string[]>;
  /** Removes files; paths already absent are not an error. */
  remove(relPaths: string[]): Promise<void>;
  /** Local sink only: the absolute file system path of relPath. */
  localPath?(relPath: string): string;
  close(): Promise<void>;
}

export interface S3SinkOptions {
  /** Custom S3-compatible endpoint (MinIO, R2, GCS interoperability, s3rver). */
  endpoint?: string;
  region?: string;
  /** Defaults to true when endpoint is given: most S3-compatible stores only serve path-style URLs. */
  forcePathStyle?: boolean;
  /**
   * Send and validate flexible checksums only when an operation requires them. Defaults to true
   * when endpoint is given (see s3-client.ts for why), false against AWS.
   */
  checksumWhenRequired?: boolean;
  /** Multipart part size; default 8 MiB, at least 5 MiB (the S3 minimum). */
  partSizeBytes?: number;
  /** Parts uploaded concurrently; default 2. Memory is about partSize × (queueSize + 1). */
  queueSize?: number;
  /** Default: the AWS SDK's standard credential chain (env, profile, SSO, instance role...). */
  credentials?: { accessKeyId: string; secretAccessKey: string };
}
