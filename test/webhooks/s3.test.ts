import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSink, type Sink } from '../../src/sink/index.ts';
import { readDirective } from '../../src/manifest/state-store.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../src/webhooks/server.ts';
import { S3RVER_CREDENTIALS, startS3rver, type S3rverHandle } from '../helpers/s3rver.ts';
import { post } from './http.ts';

/** The receiver on an S3 destination: directives, event log and purge through the S3 sink. */
let store: S3rverHandle;
let sink: Sink;
let rx: WebhookReceiver;
let tokenDir: string;

beforeAll(async () => {
  store = await startS3rver();
  sink = await openSink(`s3://${store.bucket}/exports`, { s3: { endpoint: store.endpoint, credentials: S3RVER_CREDENTIALS } });
  tokenDir = await mkdtemp(join(tmpdir(), 'wh-s3-tokens-'));
  rx = await startWebhookReceiver({ sink, secret: 's3-secret-0123456789abcdef', tokenDir, purgeOnRevoke: true });
});
afterAll(async () => {
  await rx?.close();
  await sink?.close();
  await store?.close();
  if (tokenDir) await rm(tokenDir, { recursive: true, force: true });
});

describe('webhook receiver on S3', () => {
  it('approve then revoke with purge', async () => {
    const ident = { school_name: 'S', school_la_code: '1', school_urn: '2', school_establishment_number: '3' };
    const ok = await post(
      rx.url,
      JSON.stringify({ payload_type: 'schoolApproved', school_id: 'A77', ...ident, school_token: 'tok-S3-secret' }),
    );
    expect(ok.status).toBe(200);
    expect((await readDirective(sink, 'A77'))!.force_full_seq).toBe(1);

    await sink.writeAtomic('achievements/region=uk/school_id=A77/r-0001.parquet', 'x');
    await sink.writeAtomic('achievements/region=uk/school_id=A78/r-0001.parquet', 'x');
    await sink.writeAtomic('_state/region=uk/school_id=A77.json', '{}');
    const rev = await post(rx.url, JSON.stringify({ payload_type: 'accessRevoked', school_id: 'A77', ...ident, revoke_reason: 'gone' }));
    expect(rev.status).toBe(200);
    const left = await sink.list('');
    expect(left.filter((p) => p.includes('school_id=A77') && !p.startsWith('_state/_'))).toEqual([]);
    expect(left).toContain('achievements/region=uk/school_id=A78/r-0001.parquet');
    const manifest = left.find((p) => /^_manifests\/.*-purge-/.test(p))!;
    expect(JSON.parse((await sink.read(manifest))!.toString()).purged).toEqual([
      { school_id: 'A77', region: 'uk', reason: 'accessRevoked: gone', files_removed: 2 },
    ]);
    for (const p of left) expect((await sink.read(p))!.toString()).not.toContain('tok-S3-secret');
  });
});
