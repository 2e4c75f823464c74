import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, open, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ExportError } from '../../src/errors.ts';
import { realIo, type LocalIo } from '../../src/sink/local-io.ts';
import { LocalSink, openSink } from '../../src/sink/index.ts';

// The sink root is one level below a private directory, so a test can check that nothing escaped
// the root without scanning the shared temp directory.
let root: string;
beforeEach(async () => {
  root = path.join(await mkdtemp(path.join(tmpdir(), 'sink-local-')), 'root');
  await mkdir(root);
});
afterEach(async () => {
  await rm(path.dirname(root), { recursive: true, force: true });
});

/** Every file under dir, temp names included, relative, sorted. */
async function allFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)).split(path.sep).join('/'))
    .sort();
}

const REL = 'achievements/region=uk/school_id=A1/RUN-0001.ndjson';

describe('LocalSink files', () => {
  it('shows nothing at the final path before commit, then the exact bytes with their sha256 and size', async () => {
    const sink = new LocalSink(root);
    const file = await sink.openFile(REL);
    file.stream.write('{"id":"A1"}\n');
    file.stream.write(Buffer.from('{"id":"A2"}\n'));
    expect(existsSync(sink.localPath(REL))).toBe(false);
    expect(await sink.list('')).toEqual([]);
    const tempOnly = await allFiles(root);
    expect(tempOnly).toHaveLength(1);
    expect(path.posix.basename(tempOnly[0])).toMatch(/^\.RUN-0001\.ndjson\.[0-9a-f]{12}\.tmp$/);

    const result = await file.commit();
    const expected = '{"id":"A1"}\n{"id":"A2"}\n';
    expect(result).toEqual({ bytes: expected.length, sha256: createHash('sha256').update(expected).digest('hex') });
    expect(await readFile(sink.localPath(REL), 'utf8')).toBe(expected);
    expect(await allFiles(root)).toEqual([REL]);
    // commit is idempotent and abort after commit changes nothing
    expect(await file.commit()).toEqual(result);
    await file.abort();
    expect(await allFiles(root)).toEqual([REL]);
  });

  it('abort leaves neither the final file nor the temp file', async () => {
    const sink = new LocalSink(root);
    const file = await sink.openFile(REL);
    file.stream.write('partial');
    await file.abort();
    await file.abort();
    expect(await allFiles(root)).toEqual([]);
    await expect(file.commit()).rejects.toMatchObject({ code: 'E_SINK' });
  });

  it('fsyncs the file before the rename and the directory after it', async () => {
    const events: string[] = [];
    const finalPath = path.join(root, ...REL.split('/'));
    const io: LocalIo = {
      async fsyncFile(fh, p) {
        events.push(`file ${path.basename(p).endsWith('.tmp') ? 'tmp' : 'final'} visible=${existsSync(finalPath)}`);
        await realIo.fsyncFile(fh, p);
      },
      async fsyncDir(dir) {
        events.push(`dir ${path.relative(root, dir) || '.'} visible=${existsSync(finalPath)}`);
        await realIo.fsyncDir(dir);
      },
    };
    const sink = new LocalSink(root, { io });
    const file = await sink.openFile(REL);
    // New directories: each parent is synced so the new entries survive a crash.
    expect(events).toEqual(['dir achievements/region=uk visible=false', 'dir achievements visible=false', 'dir . visible=false']);
    events.length = 0;
    file.stream.end('x');
    await file.commit();
    expect(events).toEqual(['file tmp visible=false', 'dir achievements/region=uk/school_id=A1 visible=true']);
  });

  it('a failing fsync rejects the commit with E_SINK and leaves nothing behind', async () => {
    const io: LocalIo = {
      fsyncFile: async () => {
        throw Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' });
      },
      fsyncDir: realIo.fsyncDir,
    };
    const sink = new LocalSink(root, { io });
    const file = await sink.openFile(REL);
    file.stream.end('data');
    await expect(file.commit()).rejects.toMatchObject({ code: 'E_SINK', message: expect.stringContaining('EIO') });
    await file.abort();
    expect(await allFiles(root)).toEqual([]);
  });

  it('a failing directory fsync after the rename takes the final file back', async () => {
    let calls = 0;
    const io: LocalIo = {
      fsyncFile: realIo.fsyncFile,
      fsyncDir: async (dir) => {
        if (++calls > 3) throw new Error('EIO: dir fsync');
        await realIo.fsyncDir(dir);
      },
    };
    const sink = new LocalSink(root, { io });
    const file = await sink.openFile(REL);
    file.stream.end('data');
    await expect(file.commit()).rejects.toThrow(/dir fsync/);
    expect(await allFiles(root)).toEqual([]);
  });

  it('writes a small file in one write, and a larger one in bounded writes as it goes', async () => {
    const probe = await open(path.join(root, 'probe'), 'w');
    const proto = Object.getPrototypeOf(probe) as { writev: (...a: unknown[]) => Promise<unknown> };
    await probe.close();
    const original = proto.writev;
    const sizes: number[] = [];
    proto.writev = function (this: unknown, buffers: unknown, ...rest: unknown[]) {
      sizes.push((buffers as Buffer[]).reduce((n, b) => n + b.length, 0));
      return original.call(this, buffers, ...rest);
    };
    try {
      const sink = new LocalSink(root);
      const small = await sink.openFile(REL);
      const parts = ['{"id":1}\n', '{"id":2}\n', '{"id":3}\n'];
      for (const p of parts) small.stream.write(Buffer.from(p));
      await small.commit();
      expect(sizes).toEqual([parts.join('').length]);
      expect(await readFile(path.join(root, ...REL.split('/')), 'utf8')).toBe(parts.join(''));

      sizes.length = 0;
      const large = await sink.openFile('big/lines.ndjson');
      const line = Buffer.alloc(1000, 'b');
      for (let i = 0; i < 300; i++) if (!large.stream.write(line)) await new Promise((r) => large.stream.once('drain', r));
      const { bytes } = await large.commit();
      expect(bytes).toBe(300_000);
      // written as it goes (never all held), each write at least the 64 KiB it waits for but the last
      expect(sizes.length).toBeGreaterThanOrEqual(4);
      expect(sizes.slice(0, -1).every((n) => n >= 64 * 1024)).toBe(true);
      expect(sizes.reduce((a, b) => a + b, 0)).toBe(300_000);
    } finally {
      proto.writev = original;
    }
  });

  it('respects backpressure and streams a file larger than the buffer', async () => {
    const sink = new LocalSink(root);
    const file = await sink.openFile('big/file.csv');
    const hash = createHash('sha256');
    const chunk = Buffer.alloc(256 * 1024, 'a');
    let sawBackpressure = false;
    for (let i = 0; i < 40; i++) {
      hash.update(chunk);
      if (!file.stream.write(chunk)) {
        sawBackpressure = true;
        await new Promise((r) => file.stream.once('drain', r));
      }
    }
    const result = await file.commit();
    expect(sawBackpressure).toBe(true);
    expect(result).toEqual({ bytes: 40 * chunk.length, sha256: hash.digest('hex') });
  });
});

describe('LocalSink small files, listing and removal', () => {
  it('writeAtomic replaces content, read returns it or undefined', async () => {
    const sink = new LocalSink(root);
    expect(await sink.read('_state/region=uk/school_id=A1.json')).toBeUndefined();
    await sink.writeAtomic('_state/region=uk/school_id=A1.json', '{"v":1}');
    await sink.writeAtomic('_state/region=uk/school_id=A1.json', Buffer.from('{"v":2}'));
    expect((await sink.read('_state/region=uk/school_id=A1.json'))?.toString()).toBe('{"v":2}');
    expect(await allFiles(root)).toEqual(['_state/region=uk/school_id=A1.json']);
  });

  it('lists committed files by prefix, sorted, without temp files, and removes them', async () => {
    const sink = new LocalSink(root);
    for (const p of ['b/x.json', 'a/2.json', 'a/1.json', 'a/sub/3.json', 'ab.json']) await sink.writeAtomic(p, p);
    const pending = await sink.openFile('a/4.json');
    pending.stream.write('not yet');
    expect(await sink.list('')).toEqual(['a/1.json', 'a/2.json', 'a/sub/3.json', 'ab.json', 'b/x.json']);
    expect(await sink.list('a/')).toEqual(['a/1.json', 'a/2.json', 'a/sub/3.json']);
    expect(await sink.list('a')).toEqual(['a/1.json', 'a/2.json', 'a/sub/3.json', 'ab.json']);
    expect(await sink.list('a/sub/3')).toEqual(['a/sub/3.json']);
    expect(await sink.list('missing/')).toEqual([]);
    await sink.remove(['a/1.json', 'b/x.json', 'never/was.json']);
    expect(await sink.list('')).toEqual(['a/2.json', 'a/sub/3.json', 'ab.json']);
    await pending.abort();
  });

  it('refuses unsafe paths with E_UNSAFE_ID before touching the disk', async () => {
    const sink = new LocalSink(root);
    const bad = ['../escape.json', 'a/../../b', '/etc/passwd', 'a\\b', 'a//b', '', 'a/./b', 'a/b\u0000c', 'a/b\nc', 'a/'];
    for (const p of bad) {
      await expect(sink.openFile(p), p).rejects.toMatchObject({ code: 'E_UNSAFE_ID' });
      await expect(sink.writeAtomic(p, 'x'), p).rejects.toMatchObject({ code: 'E_UNSAFE_ID' });
      await expect(sink.read(p), p).rejects.toMatchObject({ code: 'E_UNSAFE_ID' });
      await expect(sink.remove([p]), p).rejects.toMatchObject({ code: 'E_UNSAFE_ID' });
      expect(() => sink.localPath(p)).toThrow(ExportError);
    }
    await expect(sink.list('../')).rejects.toMatchObject({ code: 'E_UNSAFE_ID' });
    expect(await allFiles(path.dirname(root)).then((f) => f.filter((x) => x.includes('escape')))).toEqual([]);
  });
});

describe('openSink (local)', () => {
  it('accepts a directory or a file URL, creates it, and reports a file:// url', async () => {
    const dir = path.join(root, 'exports', 'nested');
    const sink = await openSink(dir);
    expect(sink.url).toBe(pathToFileURL(dir).href);
    expect(sink.localPath?.('x/y.json')).toBe(path.join(dir, 'x', 'y.json'));
    const viaUrl = await openSink(pathToFileURL(dir).href);
    expect(viaUrl.url).toBe(sink.url);
  });

  it('refuses a destination that is a file, or a bad URL, with a ConfigError naming the fix', async () => {
    const file = path.join(root, 'plain');
    await writeFile(file, 'x');
    await expect(openSink(file)).rejects.toMatchObject({
      code: 'E_CONFIG',
      message: expect.stringMatching(/not a directory|cannot create/),
    });
    await expect(openSink('')).rejects.toMatchObject({ code: 'E_CONFIG', message: expect.stringContaining('--dest') });
    await expect(openSink('gs://bucket/x')).rejects.toMatchObject({
      code: 'E_CONFIG',
      message: expect.stringContaining('unsupported scheme'),
    });
    await expect(openSink('file://host/dir')).rejects.toMatchObject({ code: 'E_CONFIG' });
  });
});
