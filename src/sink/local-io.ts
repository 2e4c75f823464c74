import { lstat, mkdir, open, stat, type FileHandle } from 'node:fs/promises';
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
  const created = await makeDirs(dir);
  for (let i = created.length - 1; i >= 0; i--) await io.fsyncDir(path.dirname(created[i]!));
}

/**
 * mkdir -p that reports the real cause and cannot loop. Node's recursive mkdir rewrites errors
 * (a read-only mount comes back as ENOENT) and loops forever where mkdir answers ENOENT for a
 * parent that exists (/proc). Here each missing level is created once, top down, and the first
 * error is thrown as the kernel gave it. Returns the directories created, top down.
 */
export async function makeDirs(dir: string): Promise<string[]> {
  const missing: string[] = [];
  for (let d = path.resolve(dir); ; d = path.dirname(d)) {
    try {
      if ((await stat(d)).isDirectory()) break;
      throw Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${d}'`), { code: 'ENOTDIR', path: d });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT' || d === path.dirname(d)) throw e;
      missing.push(d);
    }
  }
  missing.reverse();
  for (const d of missing) {
    try {
      await mkdir(d);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      // created meanwhile by someone else (fine), or a dangling symbolic link (not fine)
      if (!(await stat(d).catch(() => undefined))?.isDirectory()) {
        const l = await lstat(d).catch(() => undefined);
        const what = l?.isSymbolicLink() ? 'a symbolic link to a missing target' : 'not a directory';
        throw Object.assign(new Error(`ENOTDIR: ${d} is ${what}`), { code: 'ENOTDIR', path: d });
      }
    }
  }
  return missing;
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
