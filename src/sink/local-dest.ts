import { lstat, open, readlink, rm, stat, statfs } from 'node:fs/promises';
import path from 'node:path';
import { ConfigError } from '../errors.ts';
import { makeDirs } from './local-io.ts';
import { tempName } from './paths.ts';

/**
 * File systems that look like directories but are the kernel's windows, not storage. Writing an
 * export there is always a mistake, and some misbehave: mkdir under /proc answers ENOENT for a
 * parent that exists, which sent Node's recursive mkdir into an endless loop (it retried the
 * parent, got EEXIST, retried the child...), so `--dest /proc/x` hung and ignored SIGTERM.
 * Magic numbers from linux/magic.h.
 */
const PSEUDO_FS: Record<number, string> = {
  0x9fa0: 'proc',
  0x62656572: 'sysfs',
  0x1cd1: 'devpts',
  0x27e0eb: 'cgroup',
  0x63677270: 'cgroup2',
  0x64626720: 'debugfs',
  0x74726163: 'tracefs',
  0x73636673: 'securityfs',
  0xcafe4a11: 'bpf',
  0x6e736673: 'nsfs',
  0x42494e4d: 'binfmt_misc',
};

const CAUSES: Record<string, string> = {
  EROFS: 'the file system is mounted read-only',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  ENOSPC: 'no space left on the device',
  EDQUOT: 'the disk quota is exhausted',
  ENOTDIR: 'a part of the path is a file, not a directory',
  ELOOP: 'too many levels of symbolic links',
  ENAMETOOLONG: 'the path is too long',
  EIO: 'an I/O error',
};

/** "the file system is mounted read-only (EROFS)" rather than Node's message with its syscall. */
export function describeErrno(e: unknown): string {
  const code = (e as NodeJS.ErrnoException | null)?.code;
  if (typeof code === 'string') return `${CAUSES[code] ?? (e as Error).message.replace(/^[A-Z]+: /, '').split(',')[0]} (${code})`;
  return e instanceof Error ? e.message : String(e);
}

/**
 * Makes sure a local destination can take an export before any request is made: it exists or can
 * be created, is a directory (a dangling symbolic link or a file is named as such), is not a
 * kernel pseudo file system, and accepts a file (create, write, fsync, remove: a read-only mount
 * or a full disk shows here, by its real cause). Every problem is a ConfigError (exit 2).
 */
export async function prepareLocalDest(dir: string, o: { probeWrite: boolean; owner?: string }): Promise<void> {
  const fail = (why: string): never => {
    throw new ConfigError(`--dest ${dir}: ${why}; choose a writable directory`);
  };
  await refuseBrokenEntry(dir, fail);
  const existing = await nearestExisting(dir, fail);
  const fsName = await pseudoFs(existing);
  if (fsName !== undefined) fail(`${existing} is on a ${fsName} file system (a kernel interface, not storage)`);
  try {
    await makeDirs(dir);
  } catch (e) {
    fail(`cannot create the directory: ${describeErrno(e)}`);
  }
  const st = await stat(dir);
  if (!st.isDirectory()) fail('it is not a directory');
  if (o.probeWrite) await probeWrite(dir, o.owner, fail);
}

/** A destination that is read, not written: it must be a directory already (a typo is not an empty export). */
export async function requireExportDir(dir: string): Promise<void> {
  const st = await stat(dir).catch(() => undefined);
  if (!st?.isDirectory()) throw new ConfigError(`--dest ${dir} is not an export directory; give the directory a run wrote`);
}

async function refuseBrokenEntry(dir: string, fail: (why: string) => never): Promise<void> {
  let l;
  try {
    l = await lstat(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    fail(describeErrno(e));
  }
  if (l.isSymbolicLink()) {
    const target = await readlink(dir).catch(() => '?');
    const st = await stat(dir).catch((e: unknown) =>
      fail(
        (e as NodeJS.ErrnoException).code === 'ENOENT'
          ? `it is a symbolic link to ${target}, which does not exist`
          : `it is a symbolic link to ${target}: ${describeErrno(e)}`,
      ),
    );
    if (!st.isDirectory()) fail(`it is a symbolic link to ${target}, which is not a directory`);
    return;
  }
  if (!l.isDirectory()) fail('it is a file, not a directory');
}

/** The deepest part of `dir` that exists (where a new directory would be created). */
async function nearestExisting(dir: string, fail: (why: string) => never): Promise<string> {
  for (let d = dir; ; d = path.dirname(d)) {
    try {
      await stat(d);
      return d;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT') fail(`${d}: ${describeErrno(e)}`);
      if (d === path.dirname(d)) return d;
    }
  }
}

async function pseudoFs(p: string): Promise<string | undefined> {
  try {
    return PSEUDO_FS[(await statfs(p)).type];
  } catch {
    return undefined; // statfs is not everywhere (Windows); the write probe still speaks
  }
}

async function probeWrite(dir: string, owner: string | undefined, fail: (why: string) => never): Promise<void> {
  const probe = path.join(dir, tempName('write-probe', owner));
  let fh;
  try {
    fh = await open(probe, 'wx');
    await fh.writeFile('probe\n');
    await fh.sync();
  } catch (e) {
    fail(`cannot write a file there: ${describeErrno(e)}`);
  } finally {
    await fh?.close().catch(() => {});
    await rm(probe, { force: true }).catch(() => {});
  }
}
