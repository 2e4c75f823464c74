import { describe, expect, it } from 'vitest';
import { flagsToPipeline } from '../../src/cli/run.ts';
import { resolveRunConfig } from '../../src/config/resolve.ts';

describe('--s3-sse / --s3-sse-kms-key-id reach the sink options', () => {
  const base = { api_url: 'https://api.example.com', dest: 's3://bucket/exports' };

  it('as flags and as pipeline keys', () => {
    const fromFlags = resolveRunConfig(undefined, {
      ...base,
      ...flagsToPipeline({ 's3-sse': 'aws:kms', 's3-sse-kms-key-id': 'alias/exports' } as Parameters<typeof flagsToPipeline>[0]),
    });
    expect(fromFlags.s3.sse).toEqual({ type: 'aws:kms', kmsKeyId: 'alias/exports' });
    expect(resolveRunConfig(undefined, { ...base, s3_sse: 'AES256' }).s3.sse).toEqual({ type: 'AES256' });
    expect(resolveRunConfig(undefined, base).s3.sse).toBeUndefined();
  });

  it('a key id without aws:kms, or an unknown algorithm, is a config error', () => {
    expect(() => resolveRunConfig(undefined, { ...base, s3_sse_kms_key_id: 'k' })).toThrow(/needs s3_sse aws:kms/);
    expect(() => resolveRunConfig(undefined, { ...base, s3_sse: 'AES256', s3_sse_kms_key_id: 'k' })).toThrow(/needs s3_sse aws:kms/);
    expect(() => resolveRunConfig(undefined, { ...base, s3_sse: 'DES' as 'AES256' })).toThrow(/s3[_-]sse/);
  });
});
