import { mkdir, stat } from 'node:fs/promises';
import { ConfigError, oneLine } from '../errors.ts';
import { parseDest } from './dest.ts';
import { LocalSink } from './local.ts';
import type { S3SinkOptions, Sink } from './types.ts';

export type { S3SinkOptions, Sink, SinkFile } from './types.ts';
export { assertSafeRelPath } from './paths.ts';
export { LocalSink } from './local.ts';
export { parseDest, type Dest } from './dest.ts';

/**
 * 'DIR' | 'file:///abs/dir' | 's3://bucket/prefix' → a ready sink. Problems the user must fix
 * (bad URL, a file where the directory should be, missing bucket, no credentials) are
 * ConfigErrors with one line naming the fix, raised here before any export work starts.
 */
export async function openSink(dest: string, opts: { s3?: S3SinkOptions } = {}): Promise<Sink> {
  const parsed = parseDest(dest);
  if (parsed.kind === 'local') {
    try {
      await mkdir(parsed.dir, { recursive: true });
    } catch (e) {
      throw new ConfigError(`--dest ${parsed.dir}: cannot create the directory (${oneLine(e)}); choose a writable directory`);
    }
    const st = await stat(parsed.dir);
    if (!st.isDirectory()) throw new ConfigError(`--dest ${parsed.dir} is not a directory; choose a directory`);
    return new LocalSink(parsed.dir);
  }
  if (opts.s3?.endpoint !== undefined) checkEndpoint(opts.s3.endpoint);
  // The AWS SDK costs ~15 MB of memory and a noticeable start-up: load it only for S3 dests.
  const { S3Sink } = await import('./s3.ts');
  const sink = new S3Sink(parsed.bucket, parsed.prefix, opts.s3);
  try {
    await sink.verify();
  } catch (e) {
    await sink.close();
    throw e;
  }
  return sink;
}

function checkEndpoint(endpoint: string): void {
  let url: URL | undefined;
  try {
    url = new URL(endpoint);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw new ConfigError('--s3-endpoint must be an http:// or https:// URL, e.g. https://minio.example.com:9000');
  }
  if (url.username || url.password) {
    throw new ConfigError('--s3-endpoint: credentials do not belong in the URL; use the AWS credential chain (env, profile)');
  }
}
