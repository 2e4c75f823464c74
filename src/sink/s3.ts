import {
  AbortMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type PutObjectCommandInput,
  type S3Client,
} from '@aws-sdk/client-s3';
import { ConfigError, ExportError, oneLine } from '../errors.ts';
import { s3EndpointUrl } from '../urls.ts';
import { assertSafeOwner, assertSafePrefix, assertSafeRelPath, contentTypeFor, ownerFromDataFileName } from './paths.ts';
import {
  createS3Client,
  DEFAULT_PART_SIZE,
  DEFAULT_QUEUE_SIZE,
  encryptionParams,
  httpStatus,
  isNotFound,
  MIN_PART_SIZE,
} from './s3-client.ts';
import { openS3File } from './s3-file.ts';
import { tagOperation, type S3Operation } from './s3-ops.ts';
import { Housekeeping } from './housekeeping.ts';
import type { S3SinkOptions, Sink, SinkFile, SinkOptions, TempEntry, VersionedPath } from './types.ts';

/** Checks the options, makes the sink and proves the bucket is reachable, before any export work. */
export async function openS3Sink(bucket: string, prefix: string, opts: SinkOptions & { s3?: S3SinkOptions }): Promise<S3Sink> {
  if (opts.s3?.endpoint !== undefined) s3EndpointUrl(opts.s3.endpoint);
  checkEncryption(opts.s3?.sse);
  const sink = new S3Sink(bucket, prefix, { ...opts.s3, owner: opts.owner, housekeeping: opts.housekeeping });
  try {
    await sink.verify();
  } catch (e) {
    await sink.close();
    throw e;
  }
  return sink;
}

function checkEncryption(sse: S3SinkOptions['sse']): void {
  if (sse === undefined) return;
  if (sse.type !== 'AES256' && sse.type !== 'aws:kms') {
    throw new ConfigError(`--s3-sse ${JSON.stringify(String(sse.type))}: expected AES256 or aws:kms`);
  }
  if (sse.kmsKeyId !== undefined && sse.type !== 'aws:kms') {
    throw new ConfigError('--s3-sse-kms-key-id needs --s3-sse aws:kms');
  }
  if (sse.kmsKeyId !== undefined && !/^[A-Za-z0-9:/_.-]{1,2048}$/.test(sse.kmsKeyId)) {
    throw new ConfigError('--s3-sse-kms-key-id: expected a KMS key id, key ARN or alias (alias/name)');
  }
}

/** DeleteObjects takes at most 1000 keys per request. */
const DELETE_BATCH = 1000;

/** A bucket and key prefix on S3 or an S3-compatible store. */
export class S3Sink implements Sink {
  readonly url: string;
  /** Which store holds the bucket: the endpoint (never with credentials), or AWS S3. */
  readonly store: string;
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly keyPrefix: string;
  private readonly partSize: number;
  private readonly queueSize: number;
  private readonly encryption: ReturnType<typeof encryptionParams>;
  private readonly owner: string | undefined;
  private readonly housekeeping: Housekeeping | undefined;
  /** The store answered NotImplemented to DeleteObjects (GCS interoperability does): one DeleteObject per key. */
  private singleDeletes = false;

  /** prefix: '' or 'a/b' (no leading or trailing '/'); openSink parses and checks it. */
  constructor(bucket: string, prefix: string, opts: S3SinkOptions & SinkOptions = {}, client: S3Client = createS3Client(opts)) {
    this.bucket = bucket;
    this.keyPrefix = prefix ? `${prefix}/` : '';
    this.url = prefix ? `s3://${bucket}/${prefix}` : `s3://${bucket}`;
    this.client = client;
    this.partSize = Math.max(opts.partSizeBytes ?? DEFAULT_PART_SIZE, MIN_PART_SIZE);
    this.queueSize = Math.max(1, opts.queueSize ?? DEFAULT_QUEUE_SIZE);
    this.encryption = encryptionParams(opts.sse);
    if (opts.owner !== undefined) assertSafeOwner(opts.owner);
    this.owner = opts.owner;
    this.housekeeping = opts.housekeeping;
    this.store = describeStore(opts.endpoint ?? process.env.AWS_ENDPOINT_URL_S3 ?? process.env.AWS_ENDPOINT_URL);
  }

  /** Sends a command; a failure carries the operation's name, so a warning can name it and its IAM permission. */
  private async send<T>(operation: S3Operation, request: (client: S3Client) => Promise<T>): Promise<T> {
    try {
      return await request(this.client);
    } catch (e) {
      throw tagOperation(e, operation);
    }
  }

  /** Fails fast, before any export work, when the bucket is missing or the credentials cannot reach it. */
  async verify(): Promise<void> {
    try {
      await this.send('HeadBucket', (c) => c.send(new HeadBucketCommand({ Bucket: this.bucket })));
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
      encryption: this.encryption,
      describe: `${this.url}/${relPath}`,
    });
  }

  /** A single PutObject is atomic on S3: readers see the old object or the new one, never a mix. */
  async writeAtomic(relPath: string, data: string | Buffer): Promise<string | undefined> {
    assertSafeRelPath(relPath);
    const body = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    const out = await this.run('writing', relPath, () =>
      this.send('PutObject', (c) => c.send(new PutObjectCommand(this.putParams(relPath, body)))),
    );
    return versionTag(out.ETag);
  }

  /**
   * A conditional PutObject (If-None-Match: *): S3 writes it only when no object has the key,
   * and answers 412 PreconditionFailed otherwise; 409 ConditionalRequestConflict means another
   * conditional write of the same key is in flight, which that writer wins.
   */
  async createExclusive(relPath: string, data: string | Buffer): Promise<boolean> {
    assertSafeRelPath(relPath);
    const body = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    return this.run('creating', relPath, async () => {
      try {
        await this.send('PutObject', (c) => c.send(new PutObjectCommand({ ...this.putParams(relPath, body), IfNoneMatch: '*' })));
        return true;
      } catch (e) {
        const status = httpStatus(e);
        if (status === 412 || status === 409) return false;
        throw e;
      }
    });
  }

  /** Incomplete multipart uploads under prefix (what a crashed upload leaves; invisible to readers). */
  async listTemp(prefix: string): Promise<TempEntry[]> {
    assertSafePrefix(prefix);
    return this.run('listing incomplete uploads in', prefix || '.', async () => {
      const out: TempEntry[] = [];
      let keyMarker: string | undefined;
      let uploadIdMarker: string | undefined;
      for (;;) {
        const page = await this.send('ListMultipartUploads', (c) =>
          c.send(
            new ListMultipartUploadsCommand({
              Bucket: this.bucket,
              Prefix: this.keyPrefix + prefix,
              KeyMarker: keyMarker,
              UploadIdMarker: uploadIdMarker,
            }),
          ),
        );
        for (const u of page.Uploads ?? []) {
          if (!u.Key?.startsWith(this.keyPrefix) || !u.UploadId) continue;
          const relPath = u.Key.slice(this.keyPrefix.length);
          out.push({
            relPath,
            owner: ownerFromDataFileName(relPath.slice(relPath.lastIndexOf('/') + 1)),
            startedAt: u.Initiated,
            uploadId: u.UploadId,
          });
        }
        if (!page.IsTruncated) break;
        keyMarker = page.NextKeyMarker;
        uploadIdMarker = page.NextUploadIdMarker;
      }
      return out.sort((a, b) => (a.relPath < b.relPath ? -1 : a.relPath > b.relPath ? 1 : 0));
    });
  }

  /**
   * Aborts the incomplete uploads of runs that are gone (never this sink's own owner's). Best
   * effort where the store lacks ListMultipartUploads or AbortMultipartUpload, or the credentials
   * lack their permission: that is one warning for the run (housekeeping), the uploads stay for a
   * bucket lifecycle rule, and nothing is reported as aborted that was not.
   */
  async sweepTemp(prefix: string, isLive: (t: TempEntry) => boolean): Promise<TempEntry[]> {
    let uploads: TempEntry[];
    try {
      uploads = await this.listTemp(prefix);
    } catch (e) {
      if (!this.housekeeping || !Housekeeping.refused(e)) throw e;
      this.housekeeping.failed('sweeping incomplete uploads of killed runs', e);
      return [];
    }
    const dead = uploads.filter((t) => (this.owner === undefined || t.owner !== this.owner) && !isLive(t));
    const aborted: TempEntry[] = [];
    for (const t of dead) {
      try {
        await this.run('aborting the upload of', t.relPath, async () => {
          try {
            await this.send('AbortMultipartUpload', (c) =>
              c.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: this.keyPrefix + t.relPath, UploadId: t.uploadId })),
            );
          } catch (e) {
            if ((e as Error)?.name !== 'NoSuchUpload' && httpStatus(e) !== 404) throw e; // finished or aborted meanwhile
          }
        });
        aborted.push(t);
      } catch (e) {
        if (!this.housekeeping || !Housekeeping.refused(e)) throw e;
        this.housekeeping.failed('aborting incomplete uploads of killed runs', e);
        break; // every other abort would be refused the same way
      }
    }
    return aborted;
  }

  private putParams(relPath: string, body: Buffer): PutObjectCommandInput {
    return { Bucket: this.bucket, Key: this.keyPrefix + relPath, Body: body, ContentType: contentTypeFor(relPath), ...this.encryption };
  }

  async read(relPath: string): Promise<Buffer | undefined> {
    assertSafeRelPath(relPath);
    return this.run('reading', relPath, async () => {
      try {
        const out = await this.send('GetObject', (c) =>
          c.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.keyPrefix + relPath })),
        );
        return out.Body ? Buffer.from(await out.Body.transformToByteArray()) : Buffer.alloc(0);
      } catch (e) {
        if (isNotFound(e)) return undefined;
        throw e;
      }
    });
  }

  async list(prefix: string): Promise<string[]> {
    return (await this.listing(prefix)).map((f) => f.path);
  }

  listVersions(prefix: string): Promise<VersionedPath[]> {
    return this.listing(prefix);
  }

  private async listing(prefix: string): Promise<VersionedPath[]> {
    assertSafePrefix(prefix);
    return this.run('listing', prefix || '.', async () => {
      const out: VersionedPath[] = [];
      let token: string | undefined;
      do {
        const page = await this.send('ListObjectsV2', (c) =>
          c.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.keyPrefix + prefix, ContinuationToken: token })),
        );
        for (const obj of page.Contents ?? []) {
          if (obj.Key?.startsWith(this.keyPrefix)) out.push({ path: obj.Key.slice(this.keyPrefix.length), version: versionTag(obj.ETag) });
        }
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
      return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    });
  }

  async remove(relPaths: string[]): Promise<void> {
    relPaths.forEach(assertSafeRelPath);
    for (let i = 0; i < relPaths.length; i += DELETE_BATCH) {
      const batch = relPaths.slice(i, i + DELETE_BATCH);
      await this.run('removing', batch[0], async () => {
        if (!this.singleDeletes) {
          try {
            const out = await this.send('DeleteObjects', (c) =>
              c.send(
                new DeleteObjectsCommand({
                  Bucket: this.bucket,
                  Delete: { Objects: batch.map((p) => ({ Key: this.keyPrefix + p })), Quiet: true },
                }),
              ),
            );
            const failed = out.Errors ?? [];
            if (failed.length > 0) {
              throw new Error(
                `${failed.length} object(s) not removed, first ${failed[0].Key}: ${failed[0].Code} ${failed[0].Message ?? ''}`,
              );
            }
            return;
          } catch (e) {
            // Some S3-compatible stores (GCS interoperability) lack the batch delete: one request per key instead.
            if ((e as Error)?.name !== 'NotImplemented' && httpStatus(e) !== 501) throw e;
            this.singleDeletes = true;
          }
        }
        for (const p of batch)
          await this.send('DeleteObject', (c) => c.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.keyPrefix + p })));
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

/**
 * An ETag as a version tag: S3 quotes it in both PutObject's answer and the listing, but some
 * compatible stores quote one and not the other; unequal tags only cost a read, equal ones must
 * mean equal content, which quotes do not change.
 */
function versionTag(etag: string | undefined): string | undefined {
  return etag?.replace(/^"(.*)"$/, '$1') || undefined;
}

/** The store in messages: the endpoint without credentials or path, or AWS S3. */
function describeStore(endpoint: string | undefined): string {
  if (!endpoint) return 'AWS S3';
  try {
    return `the S3-compatible store at ${new URL(endpoint).origin}`;
  } catch {
    return 'an S3-compatible store';
  }
}
