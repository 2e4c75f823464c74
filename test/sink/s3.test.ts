import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { Readable } from 'node:stream';
import {
  GetObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import pLimit from 'p-limit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createS3Client } from '../../src/sink/s3-client.ts';
import { openSink, type Sink, type SinkFile } from '../../src/sink/index.ts';
import { S3Sink } from '../../src/sink/s3.ts';
import { S3RVER_CREDENTIALS, startS3rver, type S3rverHandle } from '../helpers/s3rver.ts';

let store: S3rverHandle;
let raw: S3Client;
let sink: Sink;
const MiB = 1024 * 1024;

const s3Options = (s: S3rverHandle = store) => ({
  endpoint: s.endpoint,
  credentials: S3RVER_CREDENTIALS,
  partSizeBytes: 5 * MiB,
  queueSize: 2,
});

beforeAll(async () => {
  store = await startS3rver();
  raw = createS3Client({ endpoint: store.endpoint, credentials: S3RVER_CREDENTIALS });
  sink = await openSink(`s3://${store.bucket}/exports/run1`, { s3: s3Options() });
});
afterAll(async () => {
  await sink?.close();
  raw?.destroy();
  await store?.close();
});

async function getObject(key: string): Promise<Buffer | undefined> {
  try {
    const out = await raw.send(new GetObjectCommand({ Bucket: store.bucket, Key: key }));
    return Buffer.from(await out.Body!.transformToByteArray());
  } catch (e) {
    if ((e as Error).name === 'NoSuchKey') return undefined;
    throw e;
  }
}

async function incompleteUploads(): Promise<string[]> {
  const out = await raw.send(new ListMultipartUploadsCommand({ Bucket: store.bucket }));
  return (out.Uploads ?? []).map((u) => u.Key!);
}

/** Deterministic bytes, generated chunk by chunk so the test itself never holds the whole file. */
function chunkAt(i: number, size: number): Buffer {
  return Buffer.alloc(size, i % 251);
}

async function writeChunks(file: SinkFile, count: number, size: number): Promise<{ sha256: string; backpressure: boolean }> {
  const hash = createHash('sha256');
  let backpressure = false;
  for (let i = 0; i < count; i++) {
    const c = chunkAt(i, size);
    hash.update(c);
    if (!file.stream.write(c)) {
      backpressure = true;
      await once(file.stream, 'drain'); // rejects if the stream errors instead
    }
  }
  return { sha256: hash.digest('hex'), backpressure };
}

describe('S3Sink against s3rver', () => {
  it('openFile/commit: invisible until commit, then the exact bytes under prefix/relPath', async () => {
    const rel = 'achievements/region=uk/school_id=A1/RUN-0001.ndjson';
    const key = `exports/run1/${rel}`;
    const file = await sink.openFile(rel);
    file.stream.write('{"id":"A1"}\n');
    expect(await getObject(key)).toBeUndefined();
    const result = await file.commit();
    const body = '{"id":"A1"}\n';
    expect(result).toEqual({ bytes: body.length, sha256: createHash('sha256').update(body).digest('hex') });
    // Read back with the SDK directly, not through the sink: no aws-chunked framing stored.
    expect((await getObject(key))?.toString()).toBe(body);
    const head = await raw.send(new HeadObjectCommand({ Bucket: store.bucket, Key: key }));
    expect(head.ContentType).toBe('application/x-ndjson');
    expect(sink.url).toBe(`s3://${store.bucket}/exports/run1`);
  });

  it('streams a file over 30 MB as a multipart upload with backpressure and bounded parts', async () => {
    const before = await store.stats();
    const file = await sink.openFile('big/RUN-0002.parquet');
    const { sha256, backpressure } = await writeChunks(file, 33, MiB);
    const result = await file.commit();
    const after = await store.stats();
    expect(result).toEqual({ bytes: 33 * MiB, sha256 });
    expect(backpressure).toBe(true);
    // 33 MiB in 5 MiB parts: 7 parts, each a separate UploadPart, never one big PutObject.
    expect(after.uploadParts - before.uploadParts).toBe(7);
    expect(after.putObjects - before.putObjects).toBe(0);
    // queueSize 2: never more than two parts in flight, so memory stays a few parts whatever the size.
    expect(after.maxConcurrentParts).toBeLessThanOrEqual(2);
    const out = await raw.send(new GetObjectCommand({ Bucket: store.bucket, Key: 'exports/run1/big/RUN-0002.parquet' }));
    const readBack = createHash('sha256');
    let length = 0;
    for await (const chunk of out.Body as Readable) {
      readBack.update(chunk);
      length += chunk.length;
    }
    expect({ length, sha256: readBack.digest('hex') }).toEqual({ length: 33 * MiB, sha256 });
    expect(await incompleteUploads()).toEqual([]);
  });

  it('abort leaves no object and no incomplete multipart upload, mid-upload or before any part', async () => {
    const file = await sink.openFile('aborted/RUN-0003.csv');
    await writeChunks(file, 12, MiB); // two parts are under way or done
    await file.abort();
    await file.abort();
    expect(await getObject('exports/run1/aborted/RUN-0003.csv')).toBeUndefined();
    expect(await incompleteUploads()).toEqual([]);
    await expect(file.commit()).rejects.toMatchObject({ code: 'E_SINK' });

    const empty = await sink.openFile('aborted/RUN-0004.csv');
    await empty.abort();
    expect(await sink.list('aborted/')).toEqual([]);
  });

  it('abort while the upload waits for more data still removes the stored parts', async () => {
    // One part stored and the next reader waiting on an open body: lib-storage's upload.abort()
    // alone would settle without ever sending AbortMultipartUpload here.
    const before = await store.stats();
    const file = await sink.openFile('aborted/RUN-0010.csv');
    await writeChunks(file, 6, MiB);
    await store.partsStored(before.partsStored + 1);
    expect(await incompleteUploads()).toEqual(['exports/run1/aborted/RUN-0010.csv']);
    await file.abort();
    expect(await incompleteUploads()).toEqual([]);
  });

  it('abort after the body ended still leaves nothing visible', async () => {
    const file = await sink.openFile('aborted/RUN-0005.csv');
    file.stream.end('small,file\n');
    await file.abort();
    expect(await getObject('exports/run1/aborted/RUN-0005.csv')).toBeUndefined();
    expect(await incompleteUploads()).toEqual([]);
  });

  it('a store failing mid-upload rejects commit and leaves no incomplete multipart upload', async () => {
    const before = await store.stats();
    await store.failUploadPartsFrom(3);
    try {
      const file = await sink.openFile('failed/RUN-0006.parquet');
      // The writer must not hang on 'drain' once the upload has failed: its write errors out.
      const written = await writeChunks(file, 40, MiB).then(
        () => 'all written',
        (e: Error) => `write failed: ${e.message}`,
      );
      expect(written).toMatch(/^write failed: .*injected fault/);
      await expect(file.commit()).rejects.toMatchObject({ code: 'E_SINK', message: expect.stringContaining('failed/RUN-0006.parquet') });
      await file.abort();
    } finally {
      await store.failUploadPartsFrom(null);
    }
    const after = await store.stats();
    // Parts 1 and 2 were stored, so an incomplete upload existed until it was aborted.
    expect(after.uploadParts - before.uploadParts).toBeGreaterThanOrEqual(3);
    expect(after.abortedUploads - before.abortedUploads).toBe(1);
    expect(await incompleteUploads()).toEqual([]);
    expect(await getObject('exports/run1/failed/RUN-0006.parquet')).toBeUndefined();
  });

  it('a caller destroying the stream (a failed pipeline) fails the upload and abort leaves no parts', async () => {
    const file = await sink.openFile('failed/RUN-0007.csv');
    await writeChunks(file, 12, MiB);
    file.stream.destroy(new Error('formatter failed'));
    await expect(file.commit()).rejects.toMatchObject({ code: 'E_SINK' });
    await file.abort();
    expect(await incompleteUploads()).toEqual([]);
    expect(await getObject('exports/run1/failed/RUN-0007.csv')).toBeUndefined();
  });

  it('an empty file commits as an empty object', async () => {
    const file = await sink.openFile('empty/RUN-0008.csv');
    const result = await file.commit();
    expect(result).toEqual({ bytes: 0, sha256: createHash('sha256').digest('hex') });
    expect(await getObject('exports/run1/empty/RUN-0008.csv')).toEqual(Buffer.alloc(0));
  });

  it('writeAtomic / read round trip; read of an absent file is undefined', async () => {
    await sink.writeAtomic('_state/region=uk/school_id=A1.json', '{"v":1}');
    await sink.writeAtomic('_state/region=uk/school_id=A1.json', Buffer.from('{"v":2}'));
    expect((await sink.read('_state/region=uk/school_id=A1.json'))?.toString()).toBe('{"v":2}');
    expect((await getObject('exports/run1/_state/region=uk/school_id=A1.json'))?.toString()).toBe('{"v":2}');
    expect(await sink.read('_state/region=uk/school_id=A999.json')).toBeUndefined();
  });

  it('lists more than 1000 keys across continuation pages, sorted and relative, then removes them', async () => {
    const keys = Array.from({ length: 1003 }, (_, i) => `many/f${String(1002 - i).padStart(4, '0')}.json`);
    const limit = pLimit(16);
    await Promise.all(
      keys.map((k) => limit(() => raw.send(new PutObjectCommand({ Bucket: store.bucket, Key: `exports/run1/${k}`, Body: 'x' })))),
    );
    // Outside the sink's prefix: must not appear.
    await raw.send(new PutObjectCommand({ Bucket: store.bucket, Key: 'exports/run10/many/other.json', Body: 'x' }));
    const firstPage = await raw.send(new ListObjectsV2Command({ Bucket: store.bucket, Prefix: 'exports/run1/many/' }));
    expect(firstPage.IsTruncated).toBe(true);

    const listed = await sink.list('many/');
    expect(listed).toHaveLength(1003);
    expect(listed).toEqual([...keys].sort());
    await sink.remove(listed);
    expect(await sink.list('many/')).toEqual([]);
  });

  it('refuses unsafe relative paths', async () => {
    for (const p of ['../x', '/abs', 'a//b', 'a\\b', '', 'a/\u0001']) {
      await expect(sink.openFile(p), p).rejects.toMatchObject({ code: 'E_UNSAFE_ID' });
      await expect(sink.writeAtomic(p, 'x'), p).rejects.toMatchObject({ code: 'E_UNSAFE_ID' });
    }
  });

  it('a sink without a prefix writes at the bucket root', async () => {
    const rootSink = new S3Sink(store.bucket, '', s3Options());
    try {
      await rootSink.writeAtomic('_manifests/RUN.json', '{}');
      expect((await getObject('_manifests/RUN.json'))?.toString()).toBe('{}');
      expect(rootSink.url).toBe(`s3://${store.bucket}`);
    } finally {
      await rootSink.close();
    }
  });
});

describe('checksum mode', () => {
  it('defaults to WHEN_REQUIRED with a custom endpoint, keeps the SDK default against AWS', async () => {
    const custom = createS3Client({ endpoint: 'http://127.0.0.1:1' });
    const aws = createS3Client({ region: 'eu-west-2' });
    const forced = createS3Client({ endpoint: 'http://127.0.0.1:1', checksumWhenRequired: false });
    try {
      expect(await custom.config.requestChecksumCalculation()).toBe('WHEN_REQUIRED');
      expect(await custom.config.responseChecksumValidation()).toBe('WHEN_REQUIRED');
      expect(custom.config.forcePathStyle).toBe(true);
      expect(await aws.config.requestChecksumCalculation()).toBe('WHEN_SUPPORTED');
      expect(aws.config.forcePathStyle).toBe(false);
      expect(await forced.config.requestChecksumCalculation()).toBe('WHEN_SUPPORTED');
    } finally {
      custom.destroy();
      aws.destroy();
      forced.destroy();
    }
  });

  it('why: under the SDK default, s3rver stores a streamed PutObject with its aws-chunked framing', async () => {
    const sdkDefault = createS3Client({ endpoint: store.endpoint, credentials: S3RVER_CREDENTIALS, checksumWhenRequired: false });
    try {
      const body = 'hello streamed\n';
      const put = (client: S3Client, key: string) =>
        client.send(
          new PutObjectCommand({ Bucket: store.bucket, Key: key, Body: Readable.from([Buffer.from(body)]), ContentLength: body.length }),
        );
      await put(sdkDefault, 'checksum/default.txt');
      await put(raw, 'checksum/when-required.txt');
      expect((await getObject('checksum/default.txt'))?.toString()).toContain('x-amz-checksum-crc32');
      expect((await getObject('checksum/when-required.txt'))?.toString()).toBe(body);
    } finally {
      sdkDefault.destroy();
    }
  });
});

describe('openSink (s3)', () => {
  it('reports a missing bucket or a bad destination as a ConfigError without credentials in the message', async () => {
    const opts = { s3: s3Options() };
    const missing = openSink('s3://no-such-bucket/x', opts);
    await expect(missing).rejects.toMatchObject({ code: 'E_CONFIG', message: expect.stringContaining('does not exist') });
    await expect(openSink('s3://Bad_Bucket/x', opts)).rejects.toMatchObject({
      code: 'E_CONFIG',
      message: expect.stringContaining('bucket name'),
    });
    await expect(openSink('s3://b/x', opts)).rejects.toMatchObject({ code: 'E_CONFIG' });
    await expect(openSink('s3://bucket/a/../b', opts)).rejects.toMatchObject({ code: 'E_CONFIG' });
    const withSecret = openSink('s3://AKIDEXAMPLE:s3cr3tVALUE@bucket/x', opts);
    await expect(withSecret).rejects.toMatchObject({ code: 'E_CONFIG' });
    await withSecret.catch((e: Error) => expect(e.message).not.toMatch(/s3cr3tVALUE|AKIDEXAMPLE/));
    await expect(openSink(`s3://${store.bucket}/x`, { s3: { ...s3Options(), endpoint: 'ftp://x' } })).rejects.toMatchObject({
      code: 'E_CONFIG',
      message: expect.stringContaining('--s3-endpoint'),
    });
  });

  it('credentials the store refuses give a ConfigError that does not echo the secret', async () => {
    // s3rver checks the access key id (its V4 signature check is incomplete, so a wrong secret alone passes).
    const bad = openSink(`s3://${store.bucket}/x`, {
      s3: { ...s3Options(), credentials: { accessKeyId: 'UNKNOWNKEY', secretAccessKey: 'wrong-SECRET-123' } },
    });
    const err = await bad.then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err).toMatchObject({ code: 'E_CONFIG', message: expect.stringContaining('denied') });
    expect(err!.message).not.toContain('wrong-SECRET-123');
  });
});

describe('S3Sink when the store dies mid-upload', () => {
  it('commit rejects instead of hanging, and the writer is released', async () => {
    const dying = await startS3rver();
    const dyingSink = new S3Sink(dying.bucket, 'p', s3Options(dying));
    try {
      const file = await dyingSink.openFile('x/RUN-0009.parquet');
      await writeChunks(file, 6, MiB); // the first part is on its way
      await dying.kill();
      const written = await writeChunks(file, 30, MiB).then(
        () => 'all written',
        () => 'write failed',
      );
      expect(written).toBe('write failed');
      await expect(file.commit()).rejects.toMatchObject({ code: 'E_SINK', message: expect.stringContaining('x/RUN-0009.parquet') });
      await file.abort();
    } finally {
      await dyingSink.close();
      await dying.close();
    }
  });
});
