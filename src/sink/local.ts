import { readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ExportError, oneLine } from '../errors.ts';
import { openLocalFile } from './local-file.ts';
import { realIo, type LocalIo } from './local-io.ts';
import { assertSafePrefix, assertSafeRelPath, isTempName } from './paths.ts';
import type { Sink, SinkFile } from './types.ts';

/** A directory on local disk. Every file, small or large, goes through temp + fsync + rename. */
export class LocalSink implements Sink {
  readonly url: string;
  private readonly root: string;
  private readonly io: LocalIo;

  /** root must be an absolute path to an existing directory (openSink checks and creates it). */
  constructor(root: string, io: LocalIo = realIo) {
    this.root = path.resolve(root);
    this.url = pathToFileURL(this.root).href;
    this.io = io;
  }

  localPath(relPath: string): string {
    assertSafeRelPath(relPath);
    return path.join(this.root, ...relPath.split('/'));
  }

  async openFile(relPath: string): Promise<SinkFile> {
    const finalPath = this.localPath(relPath);
    try {
      return await openLocalFile(finalPath, this.io);
    } catch (e) {
      throw this.fail('opening', relPath, e);
    }
  }

  async writeAtomic(relPath: string, data: string | Buffer): Promise<void> {
    const file = await this.openFile(relPath);
    try {
      file.stream.end(data);
      await file.commit();
    } finally {
      await file.abort();
    }
  }

  async read(relPath: string): Promise<Buffer | undefined> {
    const p = this.localPath(relPath);
    try {
      return await readFile(p);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw this.fail('reading', relPath, e);
    }
  }

  async list(prefix: string): Promise<string[]> {
    assertSafePrefix(prefix);
    // Walk only the deepest directory the prefix names, then filter by the rest of it.
    const dirPart = prefix.includes('/') ? prefix.slice(0, prefix.lastIndexOf('/')) : '';
    const out: string[] = [];
    try {
      await this.walk(dirPart, out);
    } catch (e) {
      throw this.fail('listing', prefix || '.', e);
    }
    return out.filter((p) => p.startsWith(prefix)).sort();
  }

  async remove(relPaths: string[]): Promise<void> {
    for (const relPath of relPaths) {
      try {
        await rm(this.localPath(relPath), { force: true });
      } catch (e) {
        throw this.fail('removing', relPath, e);
      }
    }
  }

  async close(): Promise<void> {}

  private async walk(relDir: string, out: string[]): Promise<void> {
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
      if (entry.isDirectory()) await this.walk(rel, out);
      else if (entry.isFile() && !isTempName(entry.name)) out.push(rel);
    }
  }

  private fail(action: string, relPath: string, cause: unknown): ExportError {
    if (cause instanceof ExportError) return cause;
    return new ExportError('E_SINK', `${action} ${relPath} in ${this.root} failed: ${oneLine(cause)}`, { cause });
  }
}
