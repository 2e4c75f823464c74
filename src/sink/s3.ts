import {
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { ConfigError, ExportError, oneLine } from '../errors.ts';
import { assertSafePrefix, assertSafeRelPath, contentTypeFor } from './paths.ts';
import { createS3Client, DEFAULT_PART_SIZE, DEFAULT_QUEUE_SIZE, httpStatus, isNotFound, MIN_PART_SIZE } from './s3-client.ts';
import { openS3File } from './s3-file.ts';
import type { S3SinkOptions, Sink, SinkFile } from './types.ts';

/** DeleteObjects takes at most 1000 keys per request. */
const DELETE_BATCH = 1000;

/** A bucket and key prefix on S3 or an S3-compatible store. */
export class S3Sink implements Sink {
  readonly url: string;
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly keyPrefix: string;
  private readonly partSize: number;
  private readonly queueSize: number;

  /** prefix: '' or 'a/b' (no leading or trailing '/'); openSink parses and checks it. */
  constructor(bucket: string, prefix: string, opts: S3SinkOptions = {}, client: S3Client = createS3Client(opts)) {
    this.bucket = bucket;
    this.keyPrefix = prefix ? `${prefix}/` : '';
    this.url = prefix ? `s3://${bucket}/${prefix}` : `s3://${bucket}`;
    this.client = client;
    this.partSize = Math.max(opts.partSizeBytes ?? DEFAULT_PART_SIZE, MIN_PART_SIZE);
    this.queueSize = Math.max(1, opts.queueSize ?? DEFAULT_QUEUE_SIZE);
  }

  /** Fails fast, before any export work, when the bucket is missing or the credentials cannot reach it. */
  async verify(): Promise<void> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
    } catch (e) {
      const status = httpStatus(e);
      const name = (e as Error)?.name;
      if (name === 'CredentialsProviderError') {
        throw new ConfigError(
          `--dest ${this.url}: no AWS credentials found; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE`,
        );
      }
      if (/region is missing/i.test(oneLine(e))) {
        throw new ConfigError(`--dest ${this.url}: no AWS region configured; set AWS_REGION to the bucket's region`);
      }
      if (status === 404)
        throw new ConfigError(`--dest ${this.url}: bucket "${this.bucket}" does not exist; create it or fix the bucket name`);
      if (status === 403)
        throw new ConfigError(`--dest ${this.url}: access to bucket "${this.bucket}" denied; check the credentials and the bucket policy`);
      if (status === 301)
        throw new ConfigError(`--dest ${this.url}: the bucket is in another region; set AWS_REGION to the bucket's region`);
      throw new ExportError('E_SINK', `cannot reach ${this.url}: ${oneLine(e)}`, { cause: e });
    }
  }

  async openFile(relPath: string): Promise<SinkFile> {
    assertSafeRelPath(relPath);
    return openS3File({
      client: this.client,
      bucket: this.bucket,
      key: this.keyPrefix + relPath,
      contentType: contentTypeFor(relPath),
      partSize: this.partSize,
      queueSize: this.queueSize,
      describe: `${this.url}/${relPath}`,
    });
  }

  /** A single PutObject is atomic on S3: readers see the old object or the new one, never a mix. */
  async writeAtomic(relPath: string, data: string | Buffer): Promise<void> {
    assertSafeRelPath(relPath);
    const body = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    await this.run('writing', relPath, () =>
      this.client.send(
        new PutObjectCommand({ Bucket: this.bucket, Key: this.keyPrefix + relPath, Body: body, ContentType: contentTypeFor(relPath) }),
      ),
    );
  }

  async read(relPath: string): Promise<Buffer | undefined> {
    assertSafeRelPath(relPath);
    return this.run('reading', relPath, async () => {
      try {
        const out = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.keyPrefix + relPath }));
        return out.Body ? Buffer.from(await out.Body.transformToByteArray()) : Buffer.alloc(0);
      } catch (e) {
        if (isNotFound(e)) return undefined;
        throw e;
      }
    });
  }

  async list(prefix: string): Promise<string[]> {
    assertSafePrefix(prefix);
    return this.run('listing', prefix || '.', async () => {
      const out: string[] = [];
      let token: string | undefined;
      do {
        const page = await this.client.send(
          new ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.keyPrefix + prefix, ContinuationToken: token }),
        );
        for (const obj of page.Contents ?? []) {
          if (obj.Key?.startsWith(this.keyPrefix)) out.push(obj.Key.slice(this.keyPrefix.length));
        }
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
      return out.sort();
    });
  }

  async remove(relPaths: string[]): Promise<void> {
    relPaths.forEach(assertSafeRelPath);
    for (let i = 0; i < relPaths.length; i += DELETE_BATCH) {
      const batch = relPaths.slice(i, i + DELETE_BATCH);
      await this.run('removing', batch[0], async () => {
        const out = await this.client.send(
          new DeleteObjectsCommand({
            Bucket: this.bucket,
            Delete: { Objects: batch.map((p) => ({ Key: this.keyPrefix + p })), Quiet: true },
          }),
        );
        const failed = out.Errors ?? [];
        if (failed.length > 0) {
          throw new Error(`${failed.length} object(s) not removed, first ${failed[0].Key}: ${failed[0].Code} ${failed[0].Message ?? ''}`);
        }
      });
    }
  }

  async close(): Promise<void> {
    this.client.destroy();
  }

  private async run<T>(action: string, relPath: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      if (e instanceof ExportError) throw e;
      throw new ExportError('E_SINK', `${action} ${this.url}/${relPath} failed: ${oneLine(e)}`, { cause: e });
    }
  }
}
