import { once } from 'node:events';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openSink, type S3SinkOptions, type Sink, type SinkFile } from '../../src/sink/index.ts';
import { S3RVER_CREDENTIALS, startS3rver, type S3rverHandle } from '../helpers/s3rver.ts';

let store: S3rverHandle;
const opened: Sink[] = [];
const MiB = 1024 * 1024;

beforeAll(async () => {
  store = await startS3rver();
});
afterAll(async () => {
  for (const s of opened) await s.close();
  await store?.close();
});
beforeEach(async () => {
  await store.clearRequests();
});

async function sinkAt(prefix: string, extra: Partial<S3SinkOptions> = {}, owner?: string): Promise<Sink> {
  const s = await openSink(`s3://${store.bucket}/${prefix}`, {
    owner,
    s3: { endpoint: store.endpoint, credentials: S3RVER_CREDENTIALS, partSizeBytes: 5 * MiB, queueSize: 1, ...extra },
  });
  opened.push(s);
  return s;
}

async function writeMiB(file: SinkFile, count: number): Promise<void> {
  for (let i = 0; i < count; i++) if (!file.stream.write(Buffer.alloc(MiB, i))) await once(file.stream, 'drain');
}

describe('createExclusive on S3: a conditional PutObject (If-None-Match: *)', () => {
  it('creates once; concurrent creators from five sinks: exactly one wins; the others get false', async () => {
    const sinks = await Promise.all([1, 2, 3, 4, 5].map(() => sinkAt('leases')));
    const results = await Promise.all(
      sinks.map((s, i) => s.createExclusive('_state/_locks/run.json', JSON.stringify({ run_id: `run-${i}` }))),
    );
    expect(results.filter(Boolean)).toHaveLength(1);
    const winner = results.indexOf(true);
    expect((await sinks[0]!.read('_state/_locks/run.json'))?.toString()).toBe(JSON.stringify({ run_id: `run-${winner}` }));
    expect(await sinks[0]!.createExclusive('_state/_locks/run.json', 'again')).toBe(false);
    // every attempt reached the store as a conditional request; the losers were refused with 412
    const puts = (await store.requests()).filter((r) => r.op === 'PutObject' && r.key === 'leases/_state/_locks/run.json');
    expect(puts).toHaveLength(6);
    expect(puts.every((r) => r.headers['if-none-match'] === '*')).toBe(true);
    expect(puts.map((r) => r.status).sort()).toEqual([200, 412, 412, 412, 412, 412]);
    // the holder's heartbeat replaces it unconditionally
    await sinks[winner]!.writeAtomic('_state/_locks/run.json', '{"beat":2}');
    expect((await sinks[0]!.read('_state/_locks/run.json'))?.toString()).toBe('{"beat":2}');
  });
});

describe('server-side encryption on every object written', () => {
  const WRITES = ['PutObject', 'CreateMultipartUpload'];

  async function writeEverything(s: Sink, dir: string): Promise<void> {
    const big = await s.openFile(`${dir}/achievements/region=uk/school_id=A1/RUN-0001.parquet`);
    await writeMiB(big, 7); // over one 5 MiB part: a multipart upload
    await big.commit();
    const small = await s.openFile(`${dir}/schools/region=uk/school_id=A1/RUN-0001.ndjson`);
    small.stream.end('{"id":"A1"}\n'); // under one part: a single PutObject
    await small.commit();
    await s.writeAtomic(`${dir}/_manifests/RUN.json`, '{}');
    await s.writeAtomic(`${dir}/_state/region=uk/school_id=A1.json`, '{}');
    expect(await s.createExclusive(`${dir}/_state/_locks/run.json`, '{}')).toBe(true);
  }

  it('aws:kms with a key id: PutObject and CreateMultipartUpload carry both headers', async () => {
    const s = await sinkAt('kms', { sse: { type: 'aws:kms', kmsKeyId: 'alias/school-exports' } });
    await writeEverything(s, 'x');
    const writes = (await store.requests()).filter((r) => WRITES.includes(r.op));
    expect(writes.map((r) => r.op).sort()).toEqual(['CreateMultipartUpload', 'PutObject', 'PutObject', 'PutObject', 'PutObject']);
    for (const r of writes) {
      expect(r.headers).toMatchObject({
        'x-amz-server-side-encryption': 'aws:kms',
        'x-amz-server-side-encryption-aws-kms-key-id': 'alias/school-exports',
      });
    }
    expect((await s.list('x/')).length).toBe(5);
  });

  it('AES256: the header on every write, no KMS key id', async () => {
    const s = await sinkAt('aes', { sse: { type: 'AES256' } });
    await writeEverything(s, 'y');
    const writes = (await store.requests()).filter((r) => WRITES.includes(r.op));
    expect(writes).toHaveLength(5);
    for (const r of writes) {
      expect(r.headers['x-amz-server-side-encryption']).toBe('AES256');
      expect(r.headers['x-amz-server-side-encryption-aws-kms-key-id']).toBeUndefined();
    }
  });

  it('without sse no encryption header is sent (the bucket default applies)', async () => {
    const s = await sinkAt('plain');
    await s.writeAtomic('a.json', '{}');
    const [put] = (await store.requests()).filter((r) => r.op === 'PutObject');
    expect(put!.headers['x-amz-server-side-encryption']).toBeUndefined();
  });

  it('refuses a bad combination before any request, as a ConfigError', async () => {
    await expect(sinkAt('bad', { sse: { type: 'aws:kms2' as 'aws:kms' } })).rejects.toMatchObject({
      code: 'E_CONFIG',
      message: expect.stringContaining('--s3-sse'),
    });
    await expect(sinkAt('bad', { sse: { type: 'AES256', kmsKeyId: 'k' } })).rejects.toMatchObject({
      code: 'E_CONFIG',
      message: '--s3-sse-kms-key-id needs --s3-sse aws:kms',
    });
    expect(await store.requests()).toEqual([]);
  });
});

describe('incomplete multipart uploads of runs that are gone', () => {
  it('listTemp names each upload with its owner from the file name; sweepTemp aborts only the dead ones', async () => {
    const dead = '20260101T000000.000Z-dead';
    const live = '20260101T000000.000Z-live';
    const deadSink = await sinkAt('sweep', {}, dead);
    const liveSink = await sinkAt('sweep', {}, live);
    const me = await sinkAt('sweep', {}, '20260102T000000.000Z-mine');
    const before = (await store.stats()).partsStored;
    const deadFile = await deadSink.openFile(`achievements/region=uk/school_id=A1/${dead}-0001.parquet`);
    const liveFile = await liveSink.openFile(`achievements/region=uk/school_id=A2/${live}-0001.parquet`);
    await writeMiB(deadFile, 6);
    await writeMiB(liveFile, 6);
    await store.partsStored(before + 2); // each has a part stored: a crash now would leave both behind

    const temps = await me.listTemp('achievements/');
    expect(temps.map((t) => [t.relPath, t.owner])).toEqual([
      [`achievements/region=uk/school_id=A1/${dead}-0001.parquet`, dead],
      [`achievements/region=uk/school_id=A2/${live}-0001.parquet`, live],
    ]);
    expect(temps.every((t) => t.startedAt instanceof Date && t.uploadId)).toBe(true);

    const swept = await me.sweepTemp('', (t) => t.owner === live);
    expect(swept.map((t) => t.owner)).toEqual([dead]);
    expect((await me.listTemp('')).map((t) => t.owner)).toEqual([live]);
    const aborts = (await store.requests()).filter((r) => r.op === 'AbortMultipartUpload');
    expect(aborts.map((r) => r.key)).toEqual([`sweep/achievements/region=uk/school_id=A1/${dead}-0001.parquet`]);

    await liveFile.commit();
    expect(await me.list('achievements/')).toEqual([`achievements/region=uk/school_id=A2/${live}-0001.parquet`]);
    await deadFile.abort();
    expect(await me.listTemp('')).toEqual([]);
  });
});
