import { mkdir, open, type FileHandle } from 'node:fs/promises';
import path from 'node:path';

/**
 * The durability calls of the local sink, behind a seam so tests can observe their order
 * (file fsync before rename, directory fsync after) and make them fail.
 */
export interface LocalIo {
  fsyncFile(fh: FileHandle, filePath: string): Promise<void>;
  fsyncDir(dir: string): Promise<void>;
}

export const realIo: LocalIo = {
  fsyncFile: (fh) => fh.sync(),
  async fsyncDir(dir) {
    let fh: FileHandle;
    try {
      fh = await open(dir, 'r');
    } catch (e) {
      // Windows cannot open a directory for fsync; NTFS journals the rename itself.
      if (process.platform === 'win32') return;
      throw e;
    }
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
  },
};

/**
 * mkdir -p, then fsync the parent of every directory it created: a rename into a new directory
 * is only durable once the directory's own entry is.
 */
export async function ensureDir(dir: string, io: LocalIo): Promise<void> {
  const first = await mkdir(dir, { recursive: true });
  if (first === undefined) return;
  for (let d = dir; ; d = path.dirname(d)) {
    await io.fsyncDir(path.dirname(d));
    if (d === first || d === path.dirname(d)) break;
  }
}

/** fh.writev may write less than asked (a full disk, a signal); keep going until all is written. */
export async function writeAll(fh: FileHandle, chunks: Buffer[]): Promise<void> {
  let pending = chunks;
  while (pending.length > 0) {
    const total = pending.reduce((n, c) => n + c.length, 0);
    const { bytesWritten } = await fh.writev(pending);
    if (bytesWritten >= total) return;
    let skip = bytesWritten;
    const rest: Buffer[] = [];
    for (const c of pending) {
      if (skip >= c.length) skip -= c.length;
      else {
        rest.push(skip > 0 ? c.subarray(skip) : c);
        skip = 0;
      }
    }
    pending = rest;
  }
}
