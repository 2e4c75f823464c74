import { ConfigError } from '../errors.ts';
import { localDest, s3Dest, type Dest } from './dest.ts';
import { prepareLocalDest, requireExportDir } from './local-dest.ts';
import { LocalSink } from './local.ts';
import type { S3SinkOptions, Sink, SinkOptions } from './types.ts';

export interface OpenSinkOptions extends SinkOptions {
  s3?: S3SinkOptions;
  /**
   * Reading an export (status, warehouse load): a local destination must already be a directory;
   * nothing is created or probed there.
   */
  readOnly?: boolean;
}

/** One kind of destination: the URL schemes it serves, how it parses --dest, how it opens. */
export interface SinkKind<K extends Dest['kind']> {
  /** URL schemes without '://'; '' is a plain path. */
  schemes: readonly string[];
  parse(dest: string, scheme: string | undefined): Extract<Dest, { kind: K }>;
  open(dest: Extract<Dest, { kind: K }>, opts: OpenSinkOptions): Promise<Sink>;
}

/**
 * Every sink, by name: the single source of sink names (flags, messages, Dest kinds). Adding a
 * sink is its own module plus one line here.
 */
export const SINKS: { [K in Dest['kind']]: SinkKind<K> } = {
  local: {
    schemes: ['', 'file'],
    parse: (d, scheme) => localDest(d, scheme) as Extract<Dest, { kind: 'local' }>,
    async open(dest, opts) {
      if (opts.readOnly) await requireExportDir(dest.dir);
      else await prepareLocalDest(dest.dir, { probeWrite: true, owner: opts.owner });
      return new LocalSink(dest.dir, { owner: opts.owner });
    },
  },
  s3: {
    schemes: ['s3'],
    parse: (d) => s3Dest(d) as Extract<Dest, { kind: 's3' }>,
    async open(dest, opts) {
      // The AWS SDK costs ~15 MB of memory and a noticeable start-up: load it only for S3 dests.
      const { openS3Sink } = await import('./s3.ts');
      return openS3Sink(dest.bucket, dest.prefix, opts);
    },
  },
};

export type SinkName = keyof typeof SINKS;
export const SINK_NAMES = Object.keys(SINKS) as SinkName[];

/** 'DIR' | 'file:///abs/dir' | 's3://bucket/prefix' → where to write; anything else is a ConfigError naming the fix. */
export function parseDest(dest: string): Dest {
  const d = dest.trim();
  if (d === '') throw new ConfigError(`--dest is empty: give ${examples()}`);
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(d)?.[1]?.toLowerCase();
  for (const name of SINK_NAMES) {
    const kind = SINKS[name];
    if (kind.schemes.includes(scheme ?? '')) return kind.parse(d, scheme);
  }
  throw new ConfigError(`--dest ${d}: unsupported scheme "${scheme}://"; use ${examples()}`);
}

function examples(): string {
  const shown: Record<string, string> = { '': 'a directory', file: 'file:///abs/dir', s3: 's3://bucket/prefix' };
  return SINK_NAMES.flatMap((n) => SINKS[n].schemes.map((s) => shown[s] ?? `${s}://…`)).join(', ');
}
