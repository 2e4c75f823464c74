import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { GetObjectCommand, ListMultipartUploadsCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { startS3rver, S3RVER_CREDENTIALS, type S3rverHandle } from '../helpers/s3rver.ts';
import { stubS3rverEnv } from '../helpers/s3rver-env.ts';
import { currentState, readManifests } from '../helpers/read-exports.ts';
import { allSchemas, canonical, exportOnce, expectedState, tempDir } from './helpers.ts';

/**
 * Runs into a real S3-protocol store (s3rver on 127.0.0.1), read back with the SDK directly, not
 * through our sink: full then incremental; a store failing mid-upload fails the task without
 * advancing its state or leaving an incomplete upload, and the next run recovers.
 */
describe('export to S3 (s3rver)', () => {
  let sb: Sandbox;
  let store: S3rverHandle;
  let s3: S3Client;

  beforeAll(async () => {
    store = await startS3rver();
    s3 = new S3Client({ endpoint: store.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: S3RVER_CREDENTIALS });
    sb = await startSandbox({ seed: 21, schools: 3, achievementsPerSchool: 150, bigSchools: { A1003: 30_000 } });
  });
  // The SDK's credential chain reads them; unstubbed after each test (vitest.config.ts unstubEnvs).
  beforeEach(() => {
    stubS3rverEnv();
  });
  const mirrors: (() => void)[] = [];
  afterAll(async () => {
    for (const cleanup of mirrors) cleanup();
    await sb?.close();
    await store?.close();
    s3?.destroy();
  });

  /** Everything under the prefix, downloaded with the SDK into a local mirror. */
  async function mirror(prefix: string): Promise<string> {
    const out = tempDir('s3-mirror-');
    mirrors.push(out.cleanup);
    let token: string | undefined;
    do {
      const page = await s3.send(new ListObjectsV2Command({ Bucket: store.bucket, Prefix: `${prefix}/`, ContinuationToken: token }));
      for (const o of page.Contents ?? []) {
        const body = await s3.send(new GetObjectCommand({ Bucket: store.bucket, Key: o.Key! }));
        const file = join(out.dir, o.Key!.slice(prefix.length + 1));
        mkdirSync(dirname(file), { recursive: true });
        writeFileSync(file, await body.Body!.transformToByteArray());
      }
      token = page.NextContinuationToken;
    } while (token);
    return out.dir;
  }

  const dest = (prefix: string) => ({ dest: `s3://${store.bucket}/${prefix}`, s3_endpoint: store.endpoint });

  it('full and incremental runs land in the bucket and resolve to the sandbox data', async () => {
    const opts = { ...dest('exports'), format: 'parquet' as const, schools: ['A1001', 'A1002'] };
    const first = await exportOnce(sb, '', opts);
    expect(first.failures).toEqual([]);
    const ids = sb.control.records('A1001', 'achievements').map((r) => (r as { id: string }).id);
    sb.control.update('A1001', 'achievements', ids[0]!, { comment: 'updated for the S3 test' });
    sb.control.remove('A1001', 'achievements', ids[1]!);
    const second = await exportOnce(sb, '', opts);
    expect(second.failures).toEqual([]);
    expect(second.tables.achievements?.rows).toBeLessThan(10);

    const local = await mirror('exports');
    const tasks = readManifests(local);
    expect(new Set(tasks.map((t) => t.run_id)).size).toBe(2);
    const expected = await expectedState(sb, ['A1001', 'A1002'], (id) => (id === 'A1001' ? 'uk' : 'apac'));
    const actual = await currentState(local, allSchemas());
    for (const [table, rows] of expected)
      expect({ table, rows: canonical(actual.get(table) ?? []) }).toEqual({ table, rows: canonical(rows) });
  });

  it('a store failing mid-upload fails the task, keeps its state, leaves no incomplete upload; the next run recovers', async () => {
    const opts = { ...dest('big'), format: 'ndjson' as const, schools: ['A1003'], resources: ['achievements'] };
    await store.failUploadPartsFrom(2); // the achievements file (> 8 MiB) is a multipart upload
    const failed = await exportOnce(sb, '', opts);
    expect(failed.status).toBe('partial');
    expect(failed.failures.map((f) => `${f.school_id} ${f.resource}`)).toEqual(['A1003 achievements']);
    const uploads = await s3.send(new ListMultipartUploadsCommand({ Bucket: store.bucket }));
    expect(uploads.Uploads ?? []).toEqual([]);
    const keys = (await s3.send(new ListObjectsV2Command({ Bucket: store.bucket, Prefix: 'big/' }))).Contents?.map((c) => c.Key) ?? [];
    expect(keys.filter((k) => k!.startsWith('big/_state/region='))).toEqual([]); // state not advanced
    expect(keys.filter((k) => k!.startsWith('big/achievements/'))).toEqual([]); // nothing half-visible

    await store.failUploadPartsFrom(null);
    const again = await exportOnce(sb, '', opts);
    expect(again.failures).toEqual([]);
    expect(again.tables.achievements?.rows).toBe(30_000);
    const stats = await store.stats();
    expect(stats.uploadParts).toBeGreaterThan(2);
    const local = await mirror('big');
    const actual = await currentState(local, allSchemas());
    const got = (actual.get('achievements') ?? []).map((r) => String(r.id)).sort();
    const want = sb.control
      .records('A1003', 'achievements')
      .map((r) => (r as { id: string }).id)
      .sort();
    expect(got).toEqual(want);
  });
});
