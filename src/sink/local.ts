import { existsSync, readFileSync } from 'node:fs';
import { link, lstat, open, readdir, rename, rm, rmdir } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ExportError, oneLine } from '../errors.ts';
import { createTemp, openLocalFile } from './local-file.ts';
import { realIo, writeAll, type LocalIo } from './local-io.ts';
import { assertSafeOwner, assertSafePrefix, assertSafeRelPath, isTempName, tempOwner } from './paths.ts';
import type { Sink, SinkFile, SinkOptions, TempEntry, TempScan } from './types.ts';

/** Hard links are not everywhere (some network and FUSE file systems): these mean "try the fallback". */
const NO_LINK = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EXDEV', 'EMLINK']);

/** A directory on local disk. Every file, small or large, goes through temp + fsync + rename. */
export class LocalSink implements Sink {
  readonly url: string;
  private readonly root: string;
  private readonly io: LocalIo;
  private readonly owner: string | undefined;

  /** root must be an absolute path to an existing directory (openSink checks and creates it). */
  constructor(root: string, opts: SinkOptions & { io?: LocalIo } = {}) {
    this.root = path.resolve(root);
    this.url = pathToFileURL(this.root).href;
    this.io = opts.io ?? realIo;
    if (opts.owner !== undefined) assertSafeOwner(opts.owner);
    this.owner = opts.owner;
  }

  localPath(relPath: string): string {
    assertSafeRelPath(relPath);
    return path.join(this.root, ...relPath.split('/'));
  }

  async openFile(relPath: string): Promise<SinkFile> {
    const finalPath = this.localPath(relPath);
    try {
      return await openLocalFile(finalPath, this.io, this.owner);
    } catch (e) {
      throw this.fail('opening', relPath, e);
    }
  }

  /**
   * A small file (state, manifest part) replaced atomically: the same temp + fsync + rename +
   * directory fsync as openFile's commit, without a stream or a checksum (a nightly run at
   * thousands of schools writes thousands of these).
   */
  async writeAtomic(relPath: string, data: string | Buffer, o: { nameDurable?: boolean } = {}): Promise<undefined> {
    const finalPath = this.localPath(relPath);
    const dir = path.dirname(finalPath);
    const buf = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    let tmp: string | undefined;
    let renamed = false;
    try {
      const { fh, tmpPath } = await createTemp(dir, path.basename(finalPath), this.io, this.owner);
      tmp = tmpPath;
      try {
        await writeAll(fh, [buf]);
        await this.io.fsyncFile(fh, tmpPath);
      } finally {
        await fh.close();
      }
      await rename(tmpPath, finalPath);
      renamed = true;
      if (o.nameDurable !== false) await this.io.fsyncDir(dir);
    } catch (e) {
      // not durable means not written: nothing stays, as with openFile's commit
      if (tmp && !renamed) await rm(tmp, { force: true }).catch(() => undefined);
      if (renamed) await rm(finalPath, { force: true }).catch(() => undefined);
      throw this.fail('writing', relPath, e);
    }
    return undefined; // a directory has no version tags
  }

  async createExclusive(relPath: string, data: string | Buffer): Promise<boolean> {
    // A lease's temp file is written before its run holds the lease, so another run's sweep of
    // dead runs' temp files may remove it meanwhile (link then finds it gone): write it again.
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.createExclusiveOnce(relPath, data);
      } catch (e) {
        const code = ((e as { cause?: unknown }).cause as NodeJS.ErrnoException | undefined)?.code;
        if (code !== 'ENOENT' || attempt >= 3) throw e;
      }
    }
  }

  private async createExclusiveOnce(relPath: string, data: string | Buffer): Promise<boolean> {
    const finalPath = this.localPath(relPath);
    const dir = path.dirname(finalPath);
    const buf = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    try {
      const { fh, tmpPath } = await createTemp(dir, path.basename(finalPath), this.io, this.owner);
      let linking = false;
      try {
        try {
          await writeAll(fh, [buf]);
          await this.io.fsyncFile(fh, tmpPath);
        } finally {
          await fh.close();
        }
        // link() fails with EEXIST when the name is taken, and readers only ever see a complete file
        linking = true;
        await link(tmpPath, finalPath);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (!linking) throw e;
        if (code === 'EEXIST') return false;
        if (!NO_LINK.has(code ?? '')) throw e;
        return await this.createInPlace(finalPath, buf);
      } finally {
        await rm(tmpPath, { force: true });
      }
      await this.io.fsyncDir(dir);
      return true;
    } catch (e) {
      throw this.fail('creating', relPath, e);
    }
  }

  /** Without hard links: O_EXCL on the final name (a reader may briefly see it short). */
  private async createInPlace(finalPath: string, buf: Buffer): Promise<boolean> {
    let fh;
    try {
      fh = await open(finalPath, 'wx');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw e;
    }
    try {
      await writeAll(fh, [buf]);
      await this.io.fsyncFile(fh, finalPath);
    } catch (e) {
      await fh.close().catch(() => {});
      await rm(finalPath, { force: true });
      throw e;
    }
    await fh.close();
    await this.io.fsyncDir(path.dirname(finalPath));
    return true;
  }

  async read(relPath: string): Promise<Buffer | undefined> {
    const p = this.localPath(relPath);
    // Absent is the common answer (a school's directive, checked around every commit): asked
    // without the cost of an ENOENT error (measured: most of a nightly run's directive checks).
    // Read synchronously: what is read here is mostly small (state, directives, manifest parts
    // under 1 MB; only an earlier version's run manifest can be tens of MB, read whole either
    // way), and an async read is four hand-offs to the thread pool (open, stat, read, close),
    // each dearer than the call on these VMs. `status` at 10,000 schools reads every state
    // file: 3.2-3.7 s async, 2.1-2.9 s so (4 interleaved runs).
    if (!existsSync(p)) return undefined;
    try {
      return readFileSync(p);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw this.fail('reading', relPath, e);
    }
  }

  async list(prefix: string): Promise<string[]> {
    return (await this.scan(prefix, 'listing')).files;
  }

  async listTemp(prefix: string, o: TempScan = {}): Promise<TempEntry[]> {
    const { temps } = await this.scan(prefix, 'listing temp files in', o.skipDir);
    const out: TempEntry[] = [];
    for (const relPath of temps) {
      const st = await lstat(path.join(this.root, ...relPath.split('/'))).catch(() => undefined);
      if (!st) continue; // finished or discarded meanwhile
      out.push({ relPath, owner: tempOwner(path.posix.basename(relPath)), startedAt: st.mtime });
    }
    return out;
  }

  async sweepTemp(prefix: string, isLive: (t: TempEntry) => boolean, o: TempScan = {}): Promise<TempEntry[]> {
    const dead = (await this.listTemp(prefix, o)).filter((t) => (this.owner === undefined || t.owner !== this.owner) && !isLive(t));
    await this.remove(dead.map((t) => t.relPath));
    return dead;
  }

  async remove(relPaths: string[]): Promise<void> {
    const dirs = new Set<string>();
    for (const relPath of relPaths) {
      try {
        await rm(this.localPath(relPath), { force: true });
      } catch (e) {
        throw this.fail('removing', relPath, e);
      }
      const slash = relPath.lastIndexOf('/');
      if (slash > 0) dirs.add(relPath.slice(0, slash));
    }
    await this.pruneEmpty(dirs);
  }

  async close(): Promise<void> {}

  /**
   * Removes the given directories and their parents, deepest first, while they are empty; never
   * the root. rmdir only removes an empty directory, so a file written meanwhile stops it
   * (and a writer that loses its directory to us creates it again: see createTemp).
   */
  private async pruneEmpty(relDirs: Set<string>): Promise<void> {
    const all = new Set<string>();
    for (const d of relDirs) for (let p = d; p !== ''; p = p.includes('/') ? p.slice(0, p.lastIndexOf('/')) : '') all.add(p);
    const deepestFirst = [...all].sort((a, b) => b.split('/').length - a.split('/').length || (a < b ? 1 : -1));
    for (const d of deepestFirst) {
      try {
        await rmdir(path.join(this.root, ...d.split('/')));
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code !== 'ENOTEMPTY' && code !== 'EEXIST' && code !== 'ENOENT' && code !== 'ENOTDIR') {
          throw this.fail('removing the empty directory', d, e);
        }
      }
    }
  }

  /** Committed files and temp files under prefix (not inside folders skipDir matches), each sorted. */
  private async scan(prefix: string, action: string, skipDir?: (name: string) => boolean): Promise<{ files: string[]; temps: string[] }> {
    assertSafePrefix(prefix);
    // Walk only the deepest directory the prefix names, then filter by the rest of it.
    const dirPart = prefix.includes('/') ? prefix.slice(0, prefix.lastIndexOf('/')) : '';
    const files: string[] = [];
    const temps: string[] = [];
    // A folder is entered only if paths under it can start with the prefix: `_state/region=`
    // must not walk `_state/ids/`, one folder a school (measured: 1 s of `status` at 10,000).
    const mayHold = (rel: string) => (rel + '/').startsWith(prefix) || prefix.startsWith(rel + '/');
    const skip = (rel: string, name: string) => !mayHold(rel) || (skipDir?.(name) ?? false);
    try {
      await this.walk(dirPart, files, temps, skip);
    } catch (e) {
      throw this.fail(action, prefix || '.', e);
    }
    const under = (p: string) => p.startsWith(prefix);
    return { files: files.filter(under).sort(), temps: temps.filter(under).sort() };
  }

  private async walk(relDir: string, files: string[], temps: string[], skip: (rel: string, name: string) => boolean): Promise<void> {
    let entries;
    try {
      entries = await readdir(relDir ? path.join(this.root, ...relDir.split('/')) : this.root, { withFileTypes: true });
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return;
      throw e;
    }
    for (const entry of entries) {
      const rel = relDir ? `${relDir}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        if (!skip(rel, entry.name)) await this.walk(rel, files, temps, skip);
      } else if (entry.isFile()) (isTempName(entry.name) ? temps : files).push(rel);
    }
  }

  private fail(action: string, relPath: string, cause: unknown): ExportError {
    if (cause instanceof ExportError) return cause;
    return new ExportError('E_SINK', `${action} ${relPath} in ${this.root} failed: ${oneLine(cause)}`, { cause });
  }
}
