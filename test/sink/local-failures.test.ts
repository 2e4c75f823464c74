import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalSink, openSink } from '../../src/sink/index.ts';
import { openFilesUnder, readOnlyDir, smallDisk, type Mounted } from './mounts.ts';

let base: string;
const mounts: Mounted[] = [];
beforeEach(async () => {
  base = await mkdtemp(path.join(tmpdir(), 'sink-failures-'));
});
afterEach(async () => {
  for (const m of mounts.splice(0)) await m.release();
  await rm(base, { recursive: true, force: true });
});

/** Every file under dir, temp names included, relative, sorted. */
async function allFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)).split(path.sep).join('/'))
    .sort();
}
async function allDirs(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isDirectory())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)).split(path.sep).join('/'))
    .sort();
}

describe('openSink refuses an unusable local destination before any work, naming the real cause', () => {
  // the old code looped forever in Node's recursive mkdir here (and so ignored SIGTERM)
  it('a directory under /proc or /sys', { timeout: 10_000 }, async () => {
    await expect(openSink(`/proc/school-export-${process.pid}/x`)).rejects.toMatchObject({
      code: 'E_CONFIG',
      message: expect.stringMatching(/^--dest \/proc\/school-export-\d+\/x: \/proc is on a proc file system \(a kernel interface/),
    });
    await expect(openSink('/sys/school-export')).rejects.toMatchObject({
      code: 'E_CONFIG',
      message: expect.stringContaining('/sys is on a sysfs file system'),
    });
  });

  it('a read-only mount: the cause is read-only (not ENOENT), whether the directory exists or not', async () => {
    const ro = await readOnlyDir(path.join(base, 'ro'));
    mounts.push(ro);
    await expect(openSink(path.join(ro.dir, 'exports', 'deeper'))).rejects.toMatchObject({
      code: 'E_CONFIG',
      message: expect.stringContaining(`cannot create the directory: `),
    });
    await expect(openSink(path.join(ro.dir, 'exports'))).rejects.toMatchObject({
      message: expect.stringContaining(`(${ro.expectedCode})`),
    });
    await expect(openSink(ro.dir)).rejects.toMatchObject({
      code: 'E_CONFIG',
      message: expect.stringContaining(`cannot write a file there: `),
    });
    await expect(openSink(ro.dir)).rejects.toMatchObject({ message: expect.stringContaining(`(${ro.expectedCode})`) });
    // loading only reads: a read-only export is fine then
    const reader = await openSink(ro.dir, { readOnly: true });
    expect(await reader.list('')).toEqual([]);
  });

  it('a file, a path through a file, a dangling symbolic link, a link to a file', async () => {
    const file = path.join(base, 'a-file');
    await writeFile(file, 'x');
    await expect(openSink(file)).rejects.toMatchObject({
      code: 'E_CONFIG',
      message: `--dest ${file}: it is a file, not a directory; choose a writable directory`,
    });
    await expect(openSink(path.join(file, 'sub'))).rejects.toMatchObject({
      code: 'E_CONFIG',
      message: expect.stringContaining('a part of the path is a file, not a directory (ENOTDIR)'),
    });
    const dangling = path.join(base, 'dangling');
    await symlink(path.join(base, 'nowhere'), dangling);
    await expect(openSink(dangling)).rejects.toMatchObject({
      code: 'E_CONFIG',
      message: expect.stringContaining(`it is a symbolic link to ${path.join(base, 'nowhere')}, which does not exist`),
    });
    await expect(openSink(path.join(dangling, 'sub'))).rejects.toMatchObject({ code: 'E_CONFIG' });
    const toFile = path.join(base, 'to-file');
    await symlink(file, toFile);
    await expect(openSink(toFile)).rejects.toMatchObject({ message: expect.stringContaining('which is not a directory') });
  });

  it('creates a missing directory and leaves no probe file behind', async () => {
    const dir = path.join(base, 'new', 'exports');
    const sink = await openSink(dir, { owner: '20260101T000000.000Z-ab12' });
    expect(sink.url).toBe(`file://${dir}`);
    expect(await allFiles(path.join(base, 'new'))).toEqual([]);
  });
});

describe('a full disk', () => {
  const REL = 'achievements/region=uk/school_id=A1/RUN-0001.ndjson';

  it('a failed write releases the descriptor and the temp file at once, before commit or abort', async () => {
    const disk = await smallDisk(path.join(base, 'disk'), 256 * 1024);
    mounts.push(disk);
    const sink = new LocalSink(disk.dir, { owner: 'run-1' });
    const file = await sink.openFile(REL);
    const failed = new Promise<Error>((resolve) => file.stream.once('error', resolve));
    file.stream.write(Buffer.alloc(1024 * 1024, 0x78));
    expect(String((await failed).message)).toContain('ENOSPC');
    // a caller that never aborts (a bug elsewhere) still leaks nothing
    expect(await openFilesUnder(disk.dir)).toEqual([]);
    expect(await allFiles(disk.dir)).toEqual([]);
    await expect(file.commit()).rejects.toMatchObject({ code: 'E_SINK', message: expect.stringContaining('ENOSPC') });
    await file.abort();
    expect(await allFiles(disk.dir)).toEqual([]);
  });

  it('writeAtomic and createExclusive fail with E_SINK and leave no temp file and no open descriptor', async () => {
    const disk = await smallDisk(path.join(base, 'disk'), 64 * 1024);
    mounts.push(disk);
    const sink = new LocalSink(disk.dir, { owner: 'run-1' });
    const big = Buffer.alloc(512 * 1024, 0x79);
    await expect(sink.writeAtomic('_state/a.json', big)).rejects.toMatchObject({
      code: 'E_SINK',
      message: expect.stringContaining('ENOSPC'),
    });
    await expect(sink.createExclusive('_state/_locks/run.json', big)).rejects.toMatchObject({ code: 'E_SINK' });
    expect(await openFilesUnder(disk.dir)).toEqual([]);
    expect(await allFiles(disk.dir)).toEqual([]);
    expect(await sink.listTemp('')).toEqual([]);
  });
});

describe('createExclusive', () => {
  it('creates once; later and concurrent attempts get false; the winner wrote a complete file', async () => {
    const sink = new LocalSink(base, { owner: 'run-a' });
    const others = ['run-b', 'run-c', 'run-d', 'run-e'].map((o) => new LocalSink(base, { owner: o }));
    const body = (o: string) => JSON.stringify({ run_id: o, pad: 'x'.repeat(100_000) });
    const results = await Promise.all([sink, ...others].map((s, i) => s.createExclusive('_state/_locks/run.json', body(`run-${i}`))));
    expect(results.filter(Boolean)).toHaveLength(1);
    const winner = results.indexOf(true);
    expect(await readFile(path.join(base, '_state/_locks/run.json'), 'utf8')).toBe(body(`run-${winner}`));
    expect(await sink.createExclusive('_state/_locks/run.json', 'again')).toBe(false);
    expect(await allFiles(base)).toEqual(['_state/_locks/run.json']);
    // the holder replaces it (a heartbeat) with writeAtomic
    await sink.writeAtomic('_state/_locks/run.json', '{"beat":2}');
    expect(await readFile(path.join(base, '_state/_locks/run.json'), 'utf8')).toBe('{"beat":2}');
  });
});

describe('temp files of runs that are gone', () => {
  it('carry their owner; sweepTemp removes those of dead owners (and old unowned ones the predicate rejects), never a live or its own', async () => {
    const dead = new LocalSink(base, { owner: '20260101T000000.000Z-dead' });
    const live = new LocalSink(base, { owner: '20260101T000000.000Z-live' });
    const me = new LocalSink(base, { owner: '20260102T000000.000Z-mine' });
    const deadFile = await dead.openFile('achievements/region=uk/school_id=A1/x-0001.ndjson');
    deadFile.stream.write('half');
    const liveFile = await live.openFile('achievements/region=uk/school_id=A2/y-0001.ndjson');
    liveFile.stream.write('{"id":1}\n');
    const mine = await me.openFile('_state/region=uk/school_id=A3.json');
    const legacy = path.join(base, 'achievements/region=uk/school_id=A1/.old.parquet.0123456789ab.tmp');
    await writeFile(legacy, 'left by an old version');
    await utimes(legacy, new Date('2020-01-01'), new Date('2020-01-01'));

    const temps = await me.listTemp('');
    expect(temps.map((t) => [t.owner, path.posix.dirname(t.relPath)])).toEqual([
      ['20260102T000000.000Z-mine', '_state/region=uk'],
      [undefined, 'achievements/region=uk/school_id=A1'],
      ['20260101T000000.000Z-dead', 'achievements/region=uk/school_id=A1'],
      ['20260101T000000.000Z-live', 'achievements/region=uk/school_id=A2'],
    ]);
    expect(temps[1]!.startedAt).toEqual(new Date('2020-01-01'));
    expect(await me.list('')).toEqual([]); // temp files are never listed as files

    const isLive = (t: { owner?: string; startedAt?: Date }) =>
      t.owner === undefined ? Date.now() - (t.startedAt?.getTime() ?? 0) < 86_400_000 : t.owner.endsWith('-live');
    const swept = await me.sweepTemp('', isLive);
    expect(swept.map((t) => t.owner)).toEqual([undefined, '20260101T000000.000Z-dead']);
    // the emptied school directory is gone; the live run and this run write on undisturbed
    expect(existsSync(path.join(base, 'achievements/region=uk/school_id=A1'))).toBe(false);
    await liveFile.commit();
    mine.stream.end('{}');
    await mine.commit();
    expect(await me.list('')).toEqual(['_state/region=uk/school_id=A3.json', 'achievements/region=uk/school_id=A2/y-0001.ndjson']);
    await deadFile.abort(); // the dead run's handle, had it lived: nothing left to do, no error
  });
});

describe('remove prunes what it empties', () => {
  it('empty _manifests/<run_id>/ and school_id= folders go; the root and non-empty folders stay', async () => {
    await mkdir(base, { recursive: true });
    const sink = new LocalSink(base);
    for (const p of [
      '_manifests/RUN1/part-1.json',
      '_manifests/RUN1/part-2.json',
      '_manifests/RUN0.json',
      'achievements/region=uk/school_id=A1/RUN1-0001.ndjson',
      'achievements/region=uk/school_id=A2/RUN1-0001.ndjson',
      'schools/region=uk/school_id=A1/RUN1-0001.ndjson',
    ])
      await sink.writeAtomic(p, 'x');
    await sink.remove(['_manifests/RUN1/part-1.json', '_manifests/RUN1/part-2.json']);
    expect(await allDirs(base)).not.toContain('_manifests/RUN1');
    expect(await allDirs(base)).toContain('_manifests');
    await sink.remove(['achievements/region=uk/school_id=A1/RUN1-0001.ndjson', 'schools/region=uk/school_id=A1/RUN1-0001.ndjson']);
    expect(await allDirs(base)).toEqual(['_manifests', 'achievements', 'achievements/region=uk', 'achievements/region=uk/school_id=A2']);
    await sink.remove(['achievements/region=uk/school_id=A2/RUN1-0001.ndjson', '_manifests/RUN0.json', 'not/there.json']);
    expect(await allDirs(base)).toEqual([]);
    expect(existsSync(base)).toBe(true);
  });
});
