import { vi } from 'vitest';
import { S3RVER_ENV } from './s3rver.ts';

/**
 * Sets S3RVER_ENV for the current test (vitest.config.ts unstubs the environment after each test).
 * Apart from s3rver.ts, which also runs as the s3rver child process, where vitest is not loaded.
 */
export function stubS3rverEnv(): void {
  for (const [name, value] of Object.entries(S3RVER_ENV)) vi.stubEnv(name, value);
}
