import { createHash } from 'node:crypto';
import { open, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { ExportError, oneLine } from '../errors.ts';
import { ensureDir, writeAll, type LocalIo } from './local-io.ts';
import { tempName } from './paths.ts';
import type { SinkFile } from './types.ts';

/**
 * One local file: bytes go to `.<name>.<random>.tmp` beside the final path, hashed as they
 * pass; commit fsyncs the file, renames it into place and fsyncs the directory. A killed
 * process therefore leaves only temp names, never a partial file under a final name.
 */
export async function openLocalFile(finalPath: string, io: LocalIo): Promise<SinkFile> {
  const dir = path.dirname(finalPath);
  await ensureDir(dir, io);
  const tmpPath = path.join(dir, tempName(path.basename(finalPath)));
  const fh = await open(tmpPath, 'wx');
  const hash = createHash('sha256');
  let bytes = 0;

  const stream = new Writable({
    highWaterMark: 64 * 1024,
    writev(chunks, callback) {
      const buffers = chunks.map((c) => c.chunk as Buffer);
      for (const b of buffers) {
        hash.update(b);
        bytes += b.length;
      }
      writeAll(fh, buffers).then(() => callback(), callback);
    },
  });
  // A write error is reported by commit(); without a listener it would crash the process.
  stream.on('error', () => {});

  let commitPromise: Promise<{ bytes: number; sha256: string }> | undefined;
  let discarded = false;
  let fhClosed = false;
  const closeFh = async () => {
    if (fhClosed) return;
    fhClosed = true;
    await fh.close();
  };
  const discard = async (renamed: boolean) => {
    discarded = true;
    stream.destroy();
    await closeFh().catch(() => {});
    await rm(tmpPath, { force: true });
    if (renamed) await rm(finalPath, { force: true });
  };

  const doCommit = async () => {
    if (discarded) throw new ExportError('E_SINK', `cannot commit ${finalPath}: it was aborted`);
    let renamed = false;
    try {
      if (!stream.writableEnded) stream.end();
      await finished(stream);
      await io.fsyncFile(fh, tmpPath);
      await closeFh();
      await rename(tmpPath, finalPath);
      renamed = true;
      await io.fsyncDir(dir);
    } catch (e) {
      // Not durable means not committed: the caller will not list this file, so nothing may stay.
      await discard(renamed).catch(() => {});
      throw new ExportError('E_SINK', `writing ${finalPath} failed: ${oneLine(e)}`, { cause: e });
    }
    return { bytes, sha256: hash.digest('hex') };
  };

  return {
    stream,
    commit: () => (commitPromise ??= doCommit()),
    async abort() {
      // After (or during) a commit there is nothing left to discard: a failed commit cleaned up itself.
      if (commitPromise) return void (await commitPromise.catch(() => {}));
      if (!discarded) await discard(false);
    },
  };
}
