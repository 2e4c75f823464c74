import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { ExportError } from '../errors.ts';
import type { ManifestFile } from '../manifest/types.ts';
import type { WarehouseSource } from './manifests.ts';

/**
 * Gives DuckDB a local path for a manifest-listed file: the file itself on a local destination,
 * a temporary copy otherwise (DuckDB cannot reach S3 here: no httpfs). A source with readStream
 * is copied in a stream; the Sink's read() holds one whole file in memory. The copy is removed
 * after staging.
 */
export interface LocalFiles {
  get(f: Pick<ManifestFile, 'path' | 'sha256'>): Promise<{ path: string; release(): Promise<void> }>;
  close(): Promise<void>;
}

/**
 * A listed file that is not at the destination: a purge or a compaction removed it (a
 * compaction first writes the file that replaces it, and a manifest saying so), or it was lost.
 */
export class MissingFileError extends ExportError {
  readonly missing = true;
  constructor(readonly path: string) {
    super('E_STATE', `${path} is listed in a manifest but missing from the destination`);
  }
}

export function localFiles(src: WarehouseSource, opts: { verify: boolean }): LocalFiles {
  // A promise, not the path: concurrent gets must share one directory (awaiting mkdtemp in each
  // made two, and close() removed only the last).
  let dir: Promise<string> | undefined;
  let n = 0;
  const missing = (f: Pick<ManifestFile, 'path'>) => new MissingFileError(f.path);
  return {
    async get(f) {
      if (src.localPath) {
        const path = src.localPath(f.path);
        if (opts.verify) checkSha(f, await sha256OfFile(path, f.path));
        else if (!existsSync(path)) throw missing(f);
        return { path, release: async () => {} };
      }
      dir ??= mkdtemp(join(tmpdir(), 'school-export-load-'));
      // Keep the extension: DuckDB picks gzip decompression from it.
      const path = join(await dir, `${n++}-${f.path.slice(f.path.lastIndexOf('/') + 1)}`);
      const release = () => rm(path, { force: true });
      try {
        const hash = createHash('sha256');
        if (src.readStream) {
          const stream = await src.readStream(f.path);
          if (!stream) throw missing(f);
          await pipeline(
            stream,
            async function* (chunks: AsyncIterable<Buffer>) {
              for await (const chunk of chunks) {
                hash.update(chunk);
                yield chunk;
              }
            },
            createWriteStream(path),
          );
        } else {
          const buf = await src.read(f.path);
          if (!buf) throw missing(f);
          hash.update(buf);
          await writeFile(path, buf);
        }
        if (opts.verify) checkSha(f, hash.digest('hex'));
      } catch (e) {
        await release();
        throw e;
      }
      return { path, release };
    },
    async close() {
      // a failed mkdtemp was reported by the get() that met it, and left nothing to remove
      const made = await dir?.catch(() => undefined);
      if (made) await rm(made, { recursive: true, force: true });
    },
  };
}

async function sha256OfFile(path: string, rel: string): Promise<string> {
  const h = createHash('sha256');
  try {
    await pipeline(createReadStream(path), h);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw new MissingFileError(rel);
    throw new ExportError('E_STATE', `${rel} is listed in a manifest but cannot be read from the destination`, { cause: e });
  }
  return h.digest('hex');
}

function checkSha(f: Pick<ManifestFile, 'path' | 'sha256'>, actual: string): void {
  if (f.sha256 && f.sha256 !== actual) {
    throw new ExportError('E_STATE', `${f.path} does not match the checksum its manifest recorded: it changed after the run committed`);
  }
}
