/**
 * Every S3 operation school-export can send, with the IAM action that allows it: the single source
 * of the names a warning gives when a store refuses one (docs/s3.md lists the same, and a test
 * checks every command class the code sends is in both). `Upload` (lib-storage) sends
 * CreateMultipartUpload, UploadPart, CompleteMultipartUpload and, when it fails,
 * AbortMultipartUpload; a file smaller than one part goes as one PutObject.
 */
export const S3_OPERATIONS = {
  HeadBucket: 's3:ListBucket',
  ListObjectsV2: 's3:ListBucket',
  GetObject: 's3:GetObject',
  PutObject: 's3:PutObject',
  CreateMultipartUpload: 's3:PutObject',
  UploadPart: 's3:PutObject',
  CompleteMultipartUpload: 's3:PutObject',
  AbortMultipartUpload: 's3:AbortMultipartUpload',
  ListMultipartUploads: 's3:ListBucketMultipartUploads',
  DeleteObjects: 's3:DeleteObject',
  DeleteObject: 's3:DeleteObject',
} as const;

export type S3Operation = keyof typeof S3_OPERATIONS;

const TAG = Symbol('s3Operation');

/** Marks an error with the operation that failed, so a caller far away can name it (and its permission). */
export function tagOperation(e: unknown, operation: S3Operation): unknown {
  if (e !== null && typeof e === 'object' && !(TAG in e)) Object.defineProperty(e, TAG, { value: operation, enumerable: false });
  return e;
}

/** Why a store refused an operation, when it is the store's "not here" rather than a failure. */
export interface Refusal {
  operation: S3Operation;
  permission: string;
  /** NotImplemented (the store lacks the operation) or AccessDenied (the credentials lack the permission). */
  kind: 'NotImplemented' | 'AccessDenied';
}

/**
 * The refusal in an error or its causes: an operation the store does not implement (501,
 * NotImplemented) or that the credentials may not use (403, AccessDenied). Anything else is a real
 * failure (undefined).
 */
export function refusalOf(e: unknown): Refusal | undefined {
  for (let err = e, depth = 0; err && typeof err === 'object' && depth < 5; err = (err as { cause?: unknown }).cause, depth++) {
    const operation = (err as { [TAG]?: S3Operation })[TAG];
    if (!operation) continue;
    const name = (err as { name?: string; Code?: string }).name ?? (err as { Code?: string }).Code;
    const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    const kind =
      name === 'NotImplemented' || status === 501
        ? 'NotImplemented'
        : name === 'AccessDenied' || status === 403
          ? 'AccessDenied'
          : undefined;
    return kind ? { operation, permission: S3_OPERATIONS[operation], kind } : undefined;
  }
  return undefined;
}
