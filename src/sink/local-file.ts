import { createHash } from 'node:crypto';
import { open, rename, rm, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { pathToFileURL } from 'node:url';
import { ExportError, oneLine } from '../errors.ts';
import { sinkFile } from './file-lifecycle.ts';
import { ensureDir, writeAll, type LocalIo } from './local-io.ts';
import { tempName } from './paths.ts';
import type { SinkFile } from './types.ts';

/** Bytes held before a write (and the stream's buffer): see openLocalFile. */
const WRITE_BYTES = 64 * 1024;

/**
 * One local file: bytes go to `.<name>~<owner>~<random>.tmp` beside the final path, hashed as
 * they pass; commit fsyncs the file, renames it into place and fsyncs the directory. A killed
 * process therefore leaves only temp names, never a partial file under a final name, and the
 * owner in the name lets a later run remove them once this run is known to be gone.
 *
 * A write that fails (a full disk) closes the descriptor and removes the temp file at once: the
 * file can never be committed, and a caller that forgets to abort must not leak either.
 */
export async function openLocalFile(finalPath: string, io: LocalIo, owner?: string): Promise<SinkFile> {
  const dir = path.dirname(finalPath);
  const { fh, tmpPath } = await createTemp(dir, path.basename(finalPath), io, owner);
  const hash = createHash('sha256');
  let bytes = 0;

  let fhClosed = false;
  const closeFh = async () => {
    if (fhClosed) return;
    fhClosed = true;
    await fh.close();
  };
  let cleaned: Promise<void> | undefined;
  const cleanUp = () => (cleaned ??= closeFh().then(() => rm(tmpPath, { force: true })));

  // Bytes are held until WRITE_BYTES are ready or the file ends: a small file (most of a nightly
  // run's, a few KB each) is then one write, not one per chunk its writer made (two a data file
  // before; each write is a round trip through libuv's thread pool).
  // A chunk is kept after its write's callback, so writers must not reuse a buffer they wrote
  // (ours do not: text chunks are copied out of the encoders' scratch, Parquet pages are fresh).
  let held: Buffer[] = [];
  let heldBytes = 0;
  const flush = (callback: (e?: Error | null) => void): void => {
    const buffers = held;
    held = [];
    heldBytes = 0;
    if (buffers.length === 0) return callback();
    writeAll(fh, buffers).then(
      () => callback(),
      (e: unknown) => {
        // release the descriptor and the space before the error is seen; commit() reports it
        cleanUp()
          .catch(() => {})
          .finally(() => callback(e as Error));
      },
    );
  };
  const stream = new Writable({
    highWaterMark: WRITE_BYTES,
    writev(chunks, callback) {
      for (const c of chunks) {
        const b = c.chunk as Buffer;
        hash.update(b);
        bytes += b.length;
        held.push(b);
        heldBytes += b.length;
      }
      if (heldBytes < WRITE_BYTES) callback();
      else flush(callback);
    },
    final: flush,
  });
  // A write error is reported by commit(); without a listener it would crash the process.
  stream.on('error', () => {});

  return sinkFile(stream, {
    describe: pathToFileURL(finalPath).href,
    async commit() {
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
        stream.destroy();
        await cleanUp().catch(() => {});
        if (renamed) await rm(finalPath, { force: true }).catch(() => {});
        throw new ExportError('E_SINK', `writing ${finalPath} failed: ${oneLine(e)}`, { cause: e });
      }
      return { bytes, sha256: hash.digest('hex') };
    },
    async discard() {
      stream.destroy();
      await cleanUp();
    },
  });
}

/**
 * An exclusive temp file in the directory, created (ensureDir) when it is missing. The file is
 * tried first: the directory nearly always exists, and checking it first was one more call per
 * file written (a night writes several per school). A concurrent remove() may prune the
 * directory between the two steps (it removes directories it empties): then create it again.
 */
export async function createTemp(dir: string, baseName: string, io: LocalIo, owner?: string): Promise<{ fh: FileHandle; tmpPath: string }> {
  for (let attempt = 1; ; attempt++) {
    if (attempt > 1) await ensureDir(dir, io);
    const tmpPath = path.join(dir, tempName(baseName, owner));
    try {
      return { fh: await open(tmpPath, 'wx'), tmpPath };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT' || attempt >= 4) throw e;
    }
  }
}
