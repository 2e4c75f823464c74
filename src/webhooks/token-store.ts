import { randomBytes } from 'node:crypto';
import { chmod, mkdir, open, readFile, realpath, rename, rm } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Sink } from '../sink/types.ts';
import { ConfigError } from '../errors.ts';
import { assertSafeId } from '../ids.ts';

/**
 * School tokens from `schoolApproved` are credentials: they live in their own directory, one file
 * per school with mode 0600, never inside the export destination (which is shared with loaders and
 * often synced elsewhere), and never in logs or the event log.
 */
export function tokenFilePath(tokenDir: string, schoolId: string): string {
  return join(resolve(tokenDir), `school_id=${assertSafeId(schoolId)}.token`);
}

async function canonical(p: string): Promise<string> {
  // the directory may not exist yet: resolve the longest existing ancestor through symlinks
  const abs = resolve(p);
  try {
    return await realpath(abs);
  } catch {
    const parent = dirname(abs);
    return parent === abs ? abs : join(await canonical(parent), abs.slice(parent.length + 1));
  }
}

export async function assertTokenDirOutsideDest(tokenDir: string, sink: Sink): Promise<void> {
  if (!sink.url.startsWith('file:')) return; // an S3 destination cannot contain a local directory
  const dest = await canonical(fileURLToPath(sink.url));
  const dir = await canonical(tokenDir);
  const rel = relative(dest, dir);
  if (rel === '' || (!rel.startsWith('..') && !isAbsolute(rel))) {
    throw new ConfigError(
      `--token-dir ${tokenDir} is inside the export destination ${dest}: school tokens are credentials, keep them outside it`,
    );
  }
  const back = relative(dir, dest);
  if (back === '' || (!back.startsWith('..') && !isAbsolute(back))) {
    throw new ConfigError(`--token-dir ${tokenDir} contains the export destination ${dest}: use a separate directory for school tokens`);
  }
}

/** Atomically writes the token with mode 0600 (created so, not chmod-ed after the bytes landed). */
export async function writeSchoolToken(tokenDir: string, schoolId: string, token: string): Promise<string> {
  const final = tokenFilePath(tokenDir, schoolId);
  await mkdir(dirname(final), { recursive: true, mode: 0o700 });
  const tmp = join(dirname(final), `.${randomBytes(6).toString('hex')}.tmp`);
  const fh = await open(tmp, 'wx', 0o600);
  try {
    await fh.writeFile(token + '\n');
    await fh.sync();
  } catch (e) {
    await fh.close();
    await rm(tmp, { force: true });
    throw e;
  }
  await fh.close();
  await chmod(tmp, 0o600); // a umask can only narrow the mode, but be explicit
  await rename(tmp, final);
  return final;
}

export async function readSchoolToken(tokenDir: string, schoolId: string): Promise<string | undefined> {
  try {
    return (await readFile(tokenFilePath(tokenDir, schoolId), 'utf8')).trim();
  } catch {
    return undefined;
  }
}
