import type { Housekeeping } from './housekeeping.ts';
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
  /** Which store serves the destination (S3: its endpoint, or AWS S3), for messages; a sink with one has its conditional writes checked before the lease trusts them. */
  readonly store?: string;
  /** relPath like 'achievements/region=uk/school_id=A1/RUN-0001.parquet' ('/' separators). */
  openFile(relPath: string): Promise<SinkFile>;
  /**
   * Small files (state, manifests), replaced atomically. `o.nameDurable: false` (local): the
   * directory is not fsynced after the rename, for a file whose loss after a crash only costs
   * redoing work (a school's state: its old version stays, the next run reads those rows again).
   * Resolves with the stored object's version tag where the store gives one (S3: its ETag), the
   * tag `listVersions` shows until the file is replaced.
   */
  writeAtomic(relPath: string, data: string | Buffer, o?: { nameDurable?: boolean }): Promise<string | undefined>;
  /** The file's bytes, or undefined when absent. */
  read(relPath: string): Promise<Buffer | undefined>;
  /** Relative paths of committed files whose path starts with prefix ('' for all), sorted. */
  list(prefix: string): Promise<string[]>;
  /**
   * `list` with each file's version tag (S3: the ETag), from the same listing requests. Only on
   * stores whose listing carries one; a tag changes whenever the file's content does, so a copy
   * of a file recorded with its tag is known to be current without reading the file.
   */
  listVersions?(prefix: string): Promise<VersionedPath[]>;
  /**
   * Creates relPath holding data only if nothing is there yet: true when this call created it,
   * false when it already existed. Atomic against other processes and hosts sharing the
   * destination (local: a complete, fsynced temp file hard-linked into place; S3: a conditional
   * PutObject with If-None-Match: *), so two runs racing for a lease cannot both win.
   * Replacing the file later (a heartbeat) is writeAtomic.
   */
  createExclusive(relPath: string, data: string | Buffer): Promise<boolean>;
  /**
   * Removes files; paths already absent are not an error. Directories the removal empties are
   * removed too (local), up to the sink's root.
   */
  remove(relPaths: string[]): Promise<void>;
  /**
   * Unfinished writes under prefix: local temp files, S3 incomplete multipart uploads. A crash
   * leaves them; loaders never see them; sweepTemp removes those of runs no longer running.
   */
  listTemp(prefix: string, o?: TempScan): Promise<TempEntry[]>;
  /**
   * Removes the unfinished writes under prefix for which isLive answers false (never those of
   * this sink's own owner); returns them. Local: emptied directories go too. S3: the uploads
   * are aborted (their stored parts freed).
   * `skipDir`: local, folders whose name it matches are not entered (S3 has no folders to skip:
   * one listing of the uploads under prefix covers them).
   */
  sweepTemp(prefix: string, isLive: (t: TempEntry) => boolean, o?: TempScan): Promise<TempEntry[]>;
  /** Local sink only: the absolute file system path of relPath. */
  localPath?(relPath: string): string;
  close(): Promise<void>;
}

/** A listed file and its version tag (Sink.listVersions). */
export interface VersionedPath {
  path: string;
  /** undefined when the store's listing left it out for this file */
  version: string | undefined;
}

/** How far a search for temp files goes (sweepTemp). */
export interface TempScan {
  skipDir?: (name: string) => boolean;
}

/** An unfinished write left at the destination. */
export interface TempEntry {
  /** Local: the temp file's own relative path. S3: the key the upload would have created, relative. */
  relPath: string;
  /**
   * The run that wrote it: local temp names carry it (the sink's `owner`); for S3 uploads it is
   * read from the data file name (`<run_id>-<seq>.<ext>`). undefined when unknown (temp files
   * written before owners existed, other names): decide by `startedAt`.
   */
  owner?: string;
  /** When the write started (local: last modification; S3: the upload's Initiated time). */
  startedAt?: Date;
  /** S3: the multipart upload id. */
  uploadId?: string;
}

/** Options every sink takes. */
export interface SinkOptions {
  /**
   * Who is writing (the run id): written into temp names so a later run can tell the leftovers
   * of a dead run from the work of a live one. Letters, digits, '.', '_' and '-'.
   */
  owner?: string;
  /** Where a sweep the store refuses (unsupported, access denied) is reported instead of failing (sink/housekeeping.ts). */
  housekeeping?: Housekeeping;
}

/** Server-side encryption of every object written (data, manifests, state, leases). */
export interface S3Encryption {
  type: 'AES256' | 'aws:kms';
  /** aws:kms only: the key (id, ARN or alias); without it S3 uses the bucket's AWS-managed key. */
  kmsKeyId?: string;
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
  /** Server-side encryption requested on every write (--s3-sse, --s3-sse-kms-key-id). */
  sse?: S3Encryption;
}
