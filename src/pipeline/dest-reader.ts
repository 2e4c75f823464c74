import { existsSync } from 'node:fs';
import type { RunConfig } from '../config/resolve.ts';
import { ConfigError } from '../errors.ts';
import { openSink, parseDest } from '../sink/index.ts';
import type { Sink } from '../sink/types.ts';

/**
 * A destination opened to be read only (the dry run; a run's checks before it writes anything):
 * nothing is created or probed, and a local destination that does not exist yet reads as empty.
 */
export async function openForReading(cfg: RunConfig): Promise<Sink> {
  const dest = parseDest(cfg.dest);
  if (dest.kind === 'local' && !existsSync(dest.dir)) return emptyDestination(`file://${dest.dir}`);
  return openSink(cfg.dest, { s3: { ...cfg.s3 }, readOnly: true });
}

/** A destination nothing was written to yet: every read finds nothing. */
function emptyDestination(url: string): Sink {
  const refuse = (): never => {
    throw new ConfigError('a dry run writes nothing');
  };
  return {
    url,
    read: async () => undefined,
    list: async () => [],
    listTemp: async () => [],
    openFile: refuse,
    writeAtomic: refuse,
    createExclusive: refuse,
    remove: refuse,
    sweepTemp: refuse,
    close: async () => undefined,
  };
}
