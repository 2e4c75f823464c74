/**
 * Real file systems with real limits, for failure-path tests: a tiny tmpfs that fills up
 * (ENOSPC) and a read-only mount (EROFS). Mounting needs root (CAP_SYS_ADMIN), which is what the
 * project's machines and CI run as; there a directory without write permission proves nothing,
 * since root writes anyway. Without root, a read-only directory is a directory with mode 0555
 * (EACCES), and a full disk cannot be made honestly: that test fails saying so, rather than pass
 * on a fake.
 */
import { execFileSync } from 'node:child_process';
import { chmod, mkdir, readdir, readlink } from 'node:fs/promises';

export const isRoot = process.getuid?.() === 0;

export interface Mounted {
  dir: string;
  release(): Promise<void>;
}

function mount(dir: string, options: string): void {
  execFileSync('mount', ['-t', 'tmpfs', '-o', options, 'tmpfs', dir], { stdio: 'pipe' });
}

function unmount(dir: string): void {
  try {
    execFileSync('umount', [dir], { stdio: 'pipe' });
  } catch {
    execFileSync('umount', ['-l', dir], { stdio: 'pipe' }); // busy: detach now, the kernel frees it later
  }
}

/** A file system of `bytes` bytes at dir (created): writes past that fail with ENOSPC. */
export async function smallDisk(dir: string, bytes: number): Promise<Mounted> {
  if (!isRoot) throw new Error('this test mounts a small tmpfs to fill it up, which needs root (as on CI)');
  await mkdir(dir, { recursive: true });
  mount(dir, `size=${bytes},mode=0755`);
  return { dir, release: async () => unmount(dir) };
}

/** A directory nothing can be created in: a read-only mount as root (EROFS), mode 0555 otherwise (EACCES). */
export async function readOnlyDir(dir: string): Promise<Mounted & { expectedCode: 'EROFS' | 'EACCES' }> {
  await mkdir(dir, { recursive: true });
  if (isRoot) {
    mount(dir, 'ro,size=65536');
    return { dir, expectedCode: 'EROFS', release: async () => unmount(dir) };
  }
  await chmod(dir, 0o555);
  return { dir, expectedCode: 'EACCES', release: () => chmod(dir, 0o755) };
}

/** The paths this process holds open under dir (from /proc/self/fd). */
export async function openFilesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const fd of await readdir('/proc/self/fd')) {
    const target = await readlink(`/proc/self/fd/${fd}`).catch(() => '');
    if (target.startsWith(dir + '/') || target === dir) out.push(target);
  }
  return out;
}
