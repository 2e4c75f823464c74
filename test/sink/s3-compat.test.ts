import { once } from 'node:events';
import { DeleteObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { checkConditionalCreate, readStoreCheck, STORE_CHECK_FILE, acquireLease } from '../../src/manifest/lease.ts';
import { ExportError } from '../../src/errors.ts';
import { Housekeeping, type HousekeepingWarning } from '../../src/sink/housekeeping.ts';
import { openSink, type Sink, type SinkFile } from '../../src/sink/index.ts';
import { createS3Client } from '../../src/sink/s3-client.ts';
import { S3RVER_CREDENTIALS, startS3rver, type S3rverHandle } from '../helpers/s3rver.ts';

/**
 * Issue 20, items 2 and 3, at the sink: a store that ignores If-None-Match is found before it can
 * let two runs both take the lease; operations a store lacks, or that the credentials may not use,
 * turn sweeps into one warning instead of a failure.
 */
const MiB = 1024 * 1024;
let honest: S3rverHandle;
let careless: S3rverHandle;
const opened: Sink[] = [];

beforeAll(async () => {
  [honest, careless] = await Promise.all([startS3rver(), startS3rver({ conditionalWrites: false })]);
});
afterAll(async () => {
  for (const s of opened) await s.close();
  await Promise.all([honest?.close(), careless?.close()]);
});
beforeEach(async () => {
  await Promise.all([honest.clearRequests(), careless.clearRequests(), honest.refuse({})]);
});

async function sinkAt(store: S3rverHandle, prefix: string, o: { owner?: string; housekeeping?: Housekeeping } = {}): Promise<Sink> {
  const s = await openSink(`s3://${store.bucket}/${prefix}`, {
    ...o,
    s3: { endpoint: store.endpoint, credentials: S3RVER_CREDENTIALS, partSizeBytes: 5 * MiB, queueSize: 1 },
  });
  opened.push(s);
  return s;
}

async function writeMiB(file: SinkFile, count: number): Promise<void> {
  for (let i = 0; i < count; i++) if (!file.stream.write(Buffer.alloc(MiB, i))) await once(file.stream, 'drain');
}

const now = new Date('2030-01-01T00:00:00.000Z');

describe('the conditional-write check behind the lease', () => {
  it('a store that honours If-None-Match passes once; the result is remembered and not probed again', async () => {
    const sink = await sinkAt(honest, 'check-ok');
    const check = await checkConditionalCreate(sink, { runId: 'R1', now });
    expect(check).toEqual({
      store: `the S3-compatible store at ${honest.endpoint}`,
      conditional_create: 'enforced',
      checked_at: now.toISOString(),
      run_id: 'R1',
    });
    const puts = (await honest.requests()).filter((r) => r.op === 'PutObject' && r.key.includes('probe-'));
    expect(puts.map((r) => [r.headers['if-none-match'], r.status])).toEqual([
      ['*', 200],
      ['*', 412],
    ]);
    expect(await sink.list('_state/_locks/')).toEqual([]); // the probe is gone
    await honest.clearRequests();
    await checkConditionalCreate(sink, { runId: 'R2', now });
    expect((await honest.requests()).map((r) => `${r.method} ${r.key}`)).toEqual([`GET check-ok/${STORE_CHECK_FILE}`]);
  });

  it('a store that ignores it is refused with one line naming the store and what to do, and checked again by the next run', async () => {
    const sink = await sinkAt(careless, 'check-bad');
    let err: unknown;
    try {
      await checkConditionalCreate(sink, { runId: 'R1', now });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ExportError);
    expect((err as ExportError).code).toBe('E_LOCK_UNSAFE');
    const message = (err as Error).message;
    expect(message.split('\n')).toHaveLength(1);
    expect(message).toContain(
      `s3://${careless.bucket}/check-bad: the S3-compatible store at ${careless.endpoint} ignores conditional writes`,
    );
    expect(message).toContain('--lock none');
    expect(message).toContain('concurrencyPolicy: Forbid');
    expect(await readStoreCheck(sink)).toMatchObject({ conditional_create: 'ignored' });
    expect(await sink.list('_state/_locks/')).toEqual([]);
    // Remembered as ignored: checked again (an upgraded store is noticed), and refused again.
    await expect(checkConditionalCreate(sink, { runId: 'R2', now })).rejects.toThrow(/ignores conditional writes/);
    // acquireLease does the check first: no lease is written on such a store.
    await expect(acquireLease(sink, { runId: 'R3', shard: { index: 0, count: 1 }, waitSeconds: 0 })).rejects.toThrow(/--lock none/);
    expect(await sink.read('_state/_locks/run.json')).toBeUndefined();
  });

  it('a destination moved to another store is checked again', async () => {
    const sink = await sinkAt(honest, 'check-moved');
    await sink.writeAtomic(
      STORE_CHECK_FILE,
      JSON.stringify({ store: 'AWS S3', conditional_create: 'enforced', checked_at: '2029-01-01T00:00:00Z', run_id: 'OLD' }),
    );
    const check = await checkConditionalCreate(sink, { runId: 'R1', now });
    expect(check.store).toBe(`the S3-compatible store at ${honest.endpoint}`);
    expect((await honest.requests()).filter((r) => r.op === 'PutObject' && r.key.includes('probe-')).length).toBe(2);
  });

  it('--lock none: no check; the lease record is still written, and a live one refuses a second run', async () => {
    const sink = await sinkAt(careless, 'lock-none');
    const first = await acquireLease(sink, { runId: 'R1', shard: { index: 0, count: 1 }, waitSeconds: 0, lock: 'none' });
    expect(JSON.parse((await sink.read('_state/_locks/run.json'))!.toString())).toMatchObject({ run_id: 'R1' });
    await expect(acquireLease(sink, { runId: 'R2', shard: { index: 0, count: 1 }, waitSeconds: 0, lock: 'none' })).rejects.toThrow(
      /is being exported by run R1/,
    );
    await first.release();
    expect(await sink.read('_state/_locks/run.json')).toBeUndefined();
    expect((await careless.requests()).filter((r) => r.key.includes('probe-'))).toEqual([]);
  });
});

describe('housekeeping the store refuses', () => {
  it.each(['NotImplemented', 'AccessDenied'] as const)(
    'ListMultipartUploads answering %s: sweepTemp sweeps nothing and warns once, naming the operation and the permission',
    async (kind) => {
      const warnings: HousekeepingWarning[] = [];
      const housekeeping = new Housekeeping((w) => warnings.push(w));
      const sink = await sinkAt(honest, `refused-${kind}`, { owner: '20300101T000000.000Z-me', housekeeping });
      await honest.refuse({ ListMultipartUploads: kind });
      expect(await sink.sweepTemp('', () => false)).toEqual([]);
      expect(await sink.sweepTemp('', () => false)).toEqual([]);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatchObject({ operation: 'ListMultipartUploads', permission: 's3:ListBucketMultipartUploads' });
      expect(warnings[0]!.message).toMatch(
        kind === 'AccessDenied' ? /was denied; grant s3:ListBucketMultipartUploads/ : /does not implement ListMultipartUploads/,
      );
      // Without a housekeeping sink (status, tests) the refusal is an error as before; other errors always are.
      const plain = await sinkAt(honest, `refused-${kind}`);
      await expect(plain.sweepTemp('', () => false)).rejects.toThrow(/listing incomplete uploads/);
    },
  );

  it('AbortMultipartUpload denied: the dead upload stays, one warning, nothing reported as aborted', async () => {
    const dead = '20260101T000000.000Z-dead';
    const warnings: HousekeepingWarning[] = [];
    const me = await sinkAt(honest, 'abort-denied', {
      owner: '20260102T000000.000Z-me',
      housekeeping: new Housekeeping((w) => warnings.push(w)),
    });
    const deadSink = await sinkAt(honest, 'abort-denied', { owner: dead });
    const before = (await honest.stats()).partsStored;
    const file = await deadSink.openFile(`achievements/region=uk/school_id=A1/${dead}-0001.parquet`);
    await writeMiB(file, 6);
    await honest.partsStored(before + 1);
    await honest.refuse({ AbortMultipartUpload: 'AccessDenied' });
    expect(await me.sweepTemp('', () => false)).toEqual([]);
    expect(warnings.map((w) => w.permission)).toEqual(['s3:AbortMultipartUpload']);
    await honest.refuse({});
    expect((await me.listTemp('')).map((t) => t.owner)).toEqual([dead]);
    await file.abort();
  });

  it('a store without DeleteObjects (NotImplemented) has objects removed one DeleteObject at a time', async () => {
    const sink = await sinkAt(honest, 'single-deletes');
    await sink.writeAtomic('a/1.json', '{}');
    await sink.writeAtomic('a/2.json', '{}');
    await honest.refuse({ DeleteObjects: 'NotImplemented' });
    await sink.remove(['a/1.json', 'a/2.json']);
    expect(await sink.list('a/')).toEqual([]);
    const ops = (await honest.requests()).filter((r) => r.op.startsWith('Delete')).map((r) => `${r.op} ${r.status}`);
    expect(ops).toEqual(['DeleteObjects 501', 'DeleteObject 204', 'DeleteObject 204']);
  });
});

describe('the test store', () => {
  it('survives a write and a delete in one directory at once (s3rver removes emptied directories under a write)', async () => {
    const raw = createS3Client({ endpoint: careless.endpoint, credentials: S3RVER_CREDENTIALS });
    const put = (Key: string) => raw.send(new PutObjectCommand({ Bucket: careless.bucket, Key, Body: '{}' }));
    const del = (Key: string) => raw.send(new DeleteObjectCommand({ Bucket: careless.bucket, Key }));
    try {
      for (let i = 0; i < 40; i++) {
        await put(`race/d${i}/a.json`);
        await Promise.all([del(`race/d${i}/a.json`), put(`race/d${i}/b.json`)]);
      }
      await del('race/d0/b.json');
      await del('race/d0/b.json'); // its directory is gone: S3 answers 204, and so must the store
      const left = (await raw.send(new ListObjectsV2Command({ Bucket: careless.bucket, Prefix: 'race/' }))).Contents ?? [];
      expect(left.map((o) => o.Key)).toEqual(Array.from({ length: 39 }, (_, i) => `race/d${i + 1}/b.json`).sort());
    } finally {
      raw.destroy();
    }
  });
});
