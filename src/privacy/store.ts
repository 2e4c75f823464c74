/**
 * The part of a destination (a Sink: local or S3) privacy reads and writes: its own record, the
 * states and manifests it inspects, the files a tightening purges. Declared here, by shape, so
 * src/privacy depends on no sink code (the import graph of the README).
 */
export interface DestinationStore {
  readonly url: string;
  read(relPath: string): Promise<Buffer | undefined>;
  writeAtomic(relPath: string, data: string | Buffer): Promise<unknown>;
  /** Relative paths starting with prefix, sorted. */
  list(prefix: string): Promise<string[]>;
  remove(relPaths: string[]): Promise<void>;
}
