import { createHash } from 'node:crypto';
import { PassThrough, Writable } from 'node:stream';
import { DeleteObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { ExportError, oneLine } from '../errors.ts';
import { sinkFile } from './file-lifecycle.ts';
import type { encryptionParams } from './s3-client.ts';
import type { SinkFile } from './types.ts';

export interface S3FileTarget {
  client: S3Client;
  bucket: string;
  key: string;
  contentType: string;
  partSize: number;
  queueSize: number;
  /** Server-side encryption parameters, sent with CreateMultipartUpload (or the single PutObject). */
  encryption?: ReturnType<typeof encryptionParams>;
  /** 's3://bucket/key', for messages. */
  describe: string;
}

/**
 * One object, streamed as a multipart upload (lib-storage Upload) from a hashing writable.
 * Memory stays about partSize × (queueSize + 1) whatever the file size: Upload pulls a part at
 * a time and the writer feels backpressure through the stream.
 *
 * The object becomes visible only when CompleteMultipartUpload succeeds (or, for a file smaller
 * than one part, when its single PutObject does). To discard we destroy the body rather than
 * call upload.abort(): in lib-storage 3.x, abort() makes done() reject at once, while its
 * AbortMultipartUpload is only sent after the part readers return, and they never return if
 * the body is left open. Destroying the body makes every reader fail, lib-storage sends
 * AbortMultipartUpload (leavePartsOnError: false), and only then does done() reject, so
 * awaiting done() means the parts are gone. When the store is unreachable even for
 * AbortMultipartUpload, the parts stay: buckets should carry a lifecycle rule
 * (AbortIncompleteMultipartUpload after a day) for that case; loaders never see them anyway.
 */
export function openS3File(t: S3FileTarget): SinkFile {
  const hash = createHash('sha256');
  let bytes = 0;
  // Upload reads `body`; the caller writes `stream`. Two streams, so that the error the caller
  // sees is the store's (lib-storage's reader destroys its source with a bare AbortError).
  const body = new PassThrough();
  body.on('error', () => {});
  let waitingForDrain = false;
  const stream = new Writable({
    highWaterMark: 64 * 1024,
    write(chunk: Buffer, _enc, callback) {
      hash.update(chunk);
      bytes += chunk.length;
      if (body.write(chunk)) return callback();
      // If the upload fails instead, `settled` below destroys this stream with the store's error.
      waitingForDrain = true;
      body.once('drain', () => {
        waitingForDrain = false;
        callback();
      });
    },
    final(callback) {
      body.end();
      callback();
    },
    destroy(error, callback) {
      // A caller's pipeline that fails destroys this stream: the upload must fail too, not wait forever.
      if (!body.writableEnded || waitingForDrain) body.destroy(error ?? new Error('upload discarded'));
      callback(error);
    },
  });
  // Errors reach the caller through commit(); an unobserved 'error' event would crash the process.
  stream.on('error', () => {});

  const upload = new Upload({
    client: t.client,
    params: { Bucket: t.bucket, Key: t.key, Body: body, ContentType: t.contentType, ...t.encryption },
    partSize: t.partSize,
    queueSize: t.queueSize,
    leavePartsOnError: false,
  });
  const done = upload.done();
  // A failed store stops reading: fail the writer's pending write instead of leaving it waiting for 'drain'.
  const settled = done.then(
    () => ({ ok: true as const }),
    (error: unknown) => {
      stream.destroy(error instanceof Error ? error : new Error(String(error)));
      return { ok: false as const, error };
    },
  );

  return sinkFile(stream, {
    describe: t.describe,
    async commit() {
      if (!stream.writableEnded && !stream.destroyed) stream.end();
      const outcome = await settled;
      if (!outcome.ok) {
        throw new ExportError('E_SINK', `uploading ${t.describe} failed: ${oneLine(outcome.error)}`, { cause: outcome.error });
      }
      return { bytes, sha256: hash.digest('hex') };
    },
    async discard() {
      stream.destroy();
      body.destroy(new Error('upload discarded'));
      const outcome = await settled;
      // The body had already ended and the upload completed before the abort reached it.
      if (outcome.ok) await t.client.send(new DeleteObjectCommand({ Bucket: t.bucket, Key: t.key }));
    },
  });
}
