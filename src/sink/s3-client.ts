import { S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import type { S3Encryption, S3SinkOptions } from './types.ts';

/**
 * Client settings for AWS S3 and S3-compatible stores.
 *
 * Checksums: since early 2025 the SDK defaults to requestChecksumCalculation 'WHEN_SUPPORTED',
 * which sends a streamed PutObject with aws-chunked content encoding and a trailing CRC32.
 * AWS understands that; several S3-compatible stores do not. We measured s3rver storing the
 * chunk framing as part of the object's bytes, and older MinIO/R2/GCS interoperability
 * endpoints reject or mangle it too. So with a custom endpoint we default to 'WHEN_REQUIRED'
 * (plain bodies; checksums only where the API demands one, e.g. DeleteObjects), and we still
 * verify every file ourselves with the sha256 recorded in the manifest. Against AWS the SDK
 * default stays on.
 */
export function createS3Client(opts: S3SinkOptions = {}): S3Client {
  const custom = opts.endpoint !== undefined;
  const whenRequired = opts.checksumWhenRequired ?? custom;
  const config: S3ClientConfig = {
    forcePathStyle: opts.forcePathStyle ?? custom,
  };
  if (custom) config.endpoint = opts.endpoint;
  // S3-compatible stores ignore the region but the SDK's signer needs one.
  const region = opts.region ?? (custom ? (process.env.AWS_REGION ?? 'us-east-1') : undefined);
  if (region !== undefined) config.region = region;
  if (opts.credentials) config.credentials = opts.credentials;
  if (whenRequired) {
    config.requestChecksumCalculation = 'WHEN_REQUIRED';
    config.responseChecksumValidation = 'WHEN_REQUIRED';
  }
  return new S3Client(config);
}

export const DEFAULT_PART_SIZE = 8 * 1024 * 1024;
export const MIN_PART_SIZE = 5 * 1024 * 1024;
export const DEFAULT_QUEUE_SIZE = 2;

/** "NoSuchKey", "NotFound" or a bare 404 all mean absent. */
export function isNotFound(e: unknown): boolean {
  const err = e as { name?: string; $metadata?: { httpStatusCode?: number } };
  return err?.name === 'NoSuchKey' || err?.name === 'NotFound' || err?.$metadata?.httpStatusCode === 404;
}

export function httpStatus(e: unknown): number | undefined {
  return (e as { $metadata?: { httpStatusCode?: number } })?.$metadata?.httpStatusCode;
}

/** The request parameters of server-side encryption, spread into PutObject and CreateMultipartUpload. */
export function encryptionParams(sse: S3Encryption | undefined): { ServerSideEncryption?: S3Encryption['type']; SSEKMSKeyId?: string } {
  if (sse === undefined) return {};
  return sse.kmsKeyId === undefined ? { ServerSideEncryption: sse.type } : { ServerSideEncryption: sse.type, SSEKMSKeyId: sse.kmsKeyId };
}
