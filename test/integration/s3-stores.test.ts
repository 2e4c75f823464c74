import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { runExport } from '../../src/pipeline/run.ts';
import type { Reporter, RunEvent } from '../../src/pipeline/progress.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { openSink, type Sink } from '../../src/sink/index.ts';
import { S3RVER_CREDENTIALS, S3RVER_ENV, startS3rver, type S3rverHandle } from '../helpers/s3rver.ts';
import { runChild } from './child-run.ts';
import { sandboxConfig } from './helpers.ts';

/**
 * Issue 20, items 2 and 3, end to end: stores that are not AWS S3. One ignores If-None-Match on
 * PUT (s3rver as it is): a run refuses it, and with --lock none two runs started together still
 * never both export; one answers NotImplemented or AccessDenied to ListMultipartUploads: the export
 * completes with one warning. State and manifests are single whole PUTs, readable after all of it.
 */
const AWS_ENV = S3RVER_ENV;

function recorder(): { events: RunEvent[]; reporter: Reporter } {
  const events: RunEvent[] = [];
  return { events, reporter: { emit: (e) => void events.push(e), close() {} } };
}

/** Every state and manifest object parses as JSON (none is torn). */
async function allReadable(sink: Sink): Promise<number> {
  const paths = (await sink.list('')).filter((p) => /^_(state|manifests)\/.*\.json$/.test(p));
  for (const p of paths) {
    const text = (await sink.read(p))!.toString('utf8');
    expect(() => JSON.parse(text), p).not.toThrow();
  }
  return paths.length;
}

describe('stores that differ from AWS S3', () => {
  let sb: Sandbox;
  let careless: S3rverHandle;
  let lacking: S3rverHandle;
  const sinks: Sink[] = [];

  beforeAll(async () => {
    [careless, lacking] = await Promise.all([startS3rver({ conditionalWrites: false }), startS3rver()]);
    sb = await startSandbox({ seed: 3, schools: 2, achievementsPerSchool: 80 });
  });
  beforeEach(() => {
    for (const [k, v] of Object.entries(AWS_ENV)) vi.stubEnv(k, v);
  });
  afterAll(async () => {
    for (const s of sinks) await s.close();
    await sb?.close();
    await Promise.all([careless?.close(), lacking?.close()]);
  });

  const open = async (store: S3rverHandle, prefix: string) => {
    const s = await openSink(`s3://${store.bucket}/${prefix}`, { s3: { endpoint: store.endpoint, credentials: S3RVER_CREDENTIALS } });
    sinks.push(s);
    return s;
  };

  it('a store that ignores If-None-Match: two runs together both refuse it (exit 2, one line, no request); with --lock none one refuses the other, nothing is unreadable', async () => {
    const args = (prefix: string, ...more: string[]) => [
      '--dest',
      `s3://${careless.bucket}/${prefix}`,
      '--s3-endpoint',
      careless.endpoint,
      '--format',
      'ndjson',
      '--concurrency',
      '1',
      ...more,
    ];
    sb.control.clearRequests();
    const [a, b] = await Promise.all([runChild(sb, args('together'), AWS_ENV).done, runChild(sb, args('together'), AWS_ENV).done]);
    for (const r of [a, b]) {
      expect(r.code, r.stderr).toBe(2);
      // one line of ours (on Node 20 the AWS SDK's own NodeVersionSupportWarning precedes it)
      const lines = r.stderr.split('\n').filter((l) => l.startsWith('school-export:'));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(
        `school-export: s3://${careless.bucket}/together: the S3-compatible store at ${careless.endpoint} ignores`,
      );
      expect(lines[0]).toContain('--lock none');
    }
    expect(sb.control.requests()).toEqual([]);
    const refused = await open(careless, 'together');
    expect((await refused.list('')).filter((p) => !p.startsWith('_state/_store.json'))).toEqual([]);

    // --lock none: the scheduler keeps runs apart; one started while the other runs is refused all the same.
    const hold = sb.control.hold({ school: 'A1002', resource: 'achievements', page: 1 });
    const first = runChild(sb, args('none', '--lock', 'none'), AWS_ENV);
    await hold.reached;
    const second = await runChild(sb, args('none', '--lock', 'none'), AWS_ENV).done;
    expect(second.code, second.stderr).toBe(2);
    expect(second.stderr.split('\n').filter((l) => l.startsWith('school-export:'))).toEqual([
      expect.stringMatching(/is being exported by run .* \(pid \d+\)/),
    ]);
    hold.release();
    const ended = await first.done;
    expect(ended.code, ended.stderr).toBe(0);
    const sink = await open(careless, 'none');
    expect(await allReadable(sink)).toBeGreaterThan(3);
    expect(await sink.read('_state/_locks/run.json')).toBeUndefined();
    // Both runs' files are accounted for: the refused run wrote nothing but its refusal's absence.
    expect((await sink.list('_manifests/')).filter((p) => /^_manifests\/[^/]+\.json$/.test(p))).toHaveLength(1);
  });

  it.each(['NotImplemented', 'AccessDenied'] as const)(
    'ListMultipartUploads answering %s: the export completes with one warning naming the operation and the permission',
    async (kind) => {
      await lacking.refuse({ ListMultipartUploads: kind });
      await lacking.clearRequests();
      const { events, reporter } = recorder();
      const cfg = sandboxConfig(sb, `s3://${lacking.bucket}/lacking-${kind}`, { s3_endpoint: lacking.endpoint, format: 'ndjson' });
      const summary = await runExport(cfg, { token: sb.tokens.full, reporter });
      expect(summary.status).toBe('ok');
      expect(summary.failures).toEqual([]);
      expect(summary.tables.achievements?.rows).toBe(160);
      const warned = events.filter((e) => e.event === 'housekeeping_skipped');
      expect(warned).toEqual([expect.objectContaining({ operation: 'ListMultipartUploads', permission: 's3:ListBucketMultipartUploads' })]);
      expect(summary.notes.filter((n) => /ListMultipartUploads/.test(n))).toHaveLength(1);
      // A second run the same: still one warning, still complete.
      const again = await runExport(cfg, { token: sb.tokens.full, reporter: recorder().reporter });
      expect([again.status, again.failures, again.notes.filter((n) => /ListMultipartUploads/.test(n)).length]).toEqual(['ok', [], 1]);

      // State, manifests, leases and markers are single whole PutObjects, never multipart uploads.
      const requests = await lacking.requests();
      const small = requests.filter((r) => /\/_(state|manifests)\//.test(`/${r.key}`));
      expect(small.length).toBeGreaterThan(5);
      expect(small.filter((r) => r.op !== 'PutObject' && r.op !== 'GetObject').map((r) => r.op)).toEqual([]);
      expect(await allReadable(await open(lacking, `lacking-${kind}`))).toBeGreaterThan(3);
      await lacking.refuse({});
    },
  );
});
