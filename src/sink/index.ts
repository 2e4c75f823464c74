import { parseDest, SINKS, type OpenSinkOptions } from './registry.ts';
import type { Sink } from './types.ts';

export type { S3Encryption, S3SinkOptions, Sink, SinkFile, SinkOptions, TempEntry } from './types.ts';
export { assertSafeRelPath } from './paths.ts';
export { LocalSink } from './local.ts';
export { type Dest } from './dest.ts';
export { parseDest, SINKS, SINK_NAMES, type OpenSinkOptions, type SinkName } from './registry.ts';

/**
 * 'DIR' | 'file:///abs/dir' | 's3://bucket/prefix' → a ready sink. Problems the user must fix
 * (bad URL, a file or a dangling link where the directory should be, a read-only or pseudo file
 * system, a missing bucket, no credentials) are ConfigErrors with one line naming the real cause,
 * raised here before any request or export work starts.
 */
export async function openSink(dest: string, opts: OpenSinkOptions = {}): Promise<Sink> {
  const parsed = parseDest(dest);
  // each entry's open takes its own kind of Dest; the union needs one cast here
  const kind = SINKS[parsed.kind] as { open(d: typeof parsed, o: OpenSinkOptions): Promise<Sink> };
  return kind.open(parsed, opts);
}
