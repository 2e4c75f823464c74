import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { ExportError } from '../errors.ts';
import type { ManifestFile } from '../manifest/types.ts';
import type { WarehouseSource } from './manifests.ts';

/**
 * Gives DuckDB a local path for a manifest-listed file: the file itself on a local destination,
 * a temporary copy otherwise (DuckDB cannot reach S3 here: no httpfs). The Sink only reads whole
 * files into memory, so one remote file at a time is held; the copy is removed after staging.
 */
export interface LocalFiles {
  get(f: ManifestFile): Promise<{ path: string; release(): Promise<void> }>;
  close(): Promise<void>;
}

export function localFiles(src: WarehouseSource, opts: { verify: boolean }): LocalFiles {
  let dir: string | undefined;
  let n = 0;
  return {
    async get(f) {
      if (src.localPath) {
        const path = src.localPath(f.path);
        if (opts.verify) await checkSha(f, await sha256OfFile(path, f.path));
        return { path, release: async () => {} };
      }
      const buf = await src.read(f.path);
      if (!buf) throw new ExportError('E_STATE', `${f.path} is listed in a manifest but missing from the destination`);
      if (opts.verify) await checkSha(f, createHash('sha256').update(buf).digest('hex'));
      dir ??= await mkdtemp(join(tmpdir(), 'school-export-load-'));
      // Keep the extension: DuckDB picks gzip decompression from it.
      const path = join(dir, `${n++}-${f.path.slice(f.path.lastIndexOf('/') + 1)}`);
      await writeFile(path, buf);
      return { path, release: () => rm(path, { force: true }) };
    },
    async close() {
      if (dir) await rm(dir, { recursive: true, force: true });
    },
  };
}

async function sha256OfFile(path: string, rel: string): Promise<string> {
  const h = createHash('sha256');
  try {
    await pipeline(createReadStream(path), h);
  } catch (e) {
    throw new ExportError('E_STATE', `${rel} is listed in a manifest but cannot be read from the destination`, { cause: e });
  }
  return h.digest('hex');
}

async function checkSha(f: ManifestFile, actual: string): Promise<void> {
  if (f.sha256 && f.sha256 !== actual) {
    throw new ExportError('E_STATE', `${f.path} does not match the checksum its manifest recorded: it changed after the run committed`);
  }
}
