import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DigestedStates, DIGESTS_KEPT, DIGESTS_PREFIX, digestPath, pruneDigests } from '../../src/manifest/state-digest.ts';
import { listStates, statePath, updateState } from '../../src/manifest/state-store.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { openSink } from '../../src/sink/index.ts';
import { LocalSink } from '../../src/sink/local.ts';
import type { Sink } from '../../src/sink/types.ts';
import { collectStatus, type StatusReport } from '../../src/status/collect.ts';
import { exportOnce, tempDir } from '../integration/helpers.ts';
import { startS3rver, type S3rverHandle } from '../helpers/s3rver.ts';
import { stubS3rverEnv } from '../helpers/s3rver-env.ts';

/**
 * `status` on S3 reads the schools' states from the runs' digests (src/manifest/state-digest.ts)
 * instead of one GetObject a school, and must answer exactly what reading every state file does:
 * after a subset run, a state written behind the digests' back, a purged school, a damaged digest.
 */
const NOW = new Date('2030-01-01T00:00:00.000Z');
const SCHOOLS = 5;

describe('state digests (S3)', () => {
  let sb: Sandbox;
  let store: S3rverHandle;
  let n = 0;
  beforeAll(async () => {
    sb = await startSandbox({ seed: 11, schools: SCHOOLS, achievementsPerSchool: 3 });
    store = await startS3rver();
  });
  afterAll(async () => {
    vi.unstubAllEnvs();
    await store?.close();
    await sb?.close();
  });

  const destination = async () => {
    stubS3rverEnv();
    const dest = `s3://${store.bucket}/digest-${++n}`;
    const sink = await openSink(dest, { s3: { endpoint: store.endpoint } });
    const night = async (extra: Parameters<typeof exportOnce>[2] = {}) => {
      const summary = await exportOnce(sb, dest, {
        format: 'ndjson',
        resources: ['schools', 'achievements'],
        s3_endpoint: store.endpoint,
        ...extra,
      });
      expect(summary.status, summary.notes.join('\n')).toBe('ok');
      expect(summary.notes.join('\n')).not.toMatch(/digest/); // no warning when it was written
      return summary;
    };
    return { dest, sink, night };
  };

  /** A fresh destination on s3rver for `fn`, its sink closed after. */
  const onDestination = async (fn: (d: Awaited<ReturnType<typeof destination>>) => Promise<void>) => {
    const d = await destination();
    try {
      await fn(d);
    } finally {
      await d.sink.close();
    }
  };

  /** The status both ways: through the digests, and reading every state file (a sink without version tags). */
  async function bothWays(sink: Sink): Promise<{ viaDigest: StatusReport; direct: StatusReport; stateReads: number }> {
    const prefix = new URL(sink.url).pathname.slice(1);
    await store.clearRequests();
    const viaDigest = await collectStatus(sink, { now: NOW });
    const stateReads = (await store.requests()).filter((r) => r.op === 'GetObject' && r.key.startsWith(`${prefix}/_state/region=`)).length;
    const blind: Sink = Object.assign(Object.create(sink) as Sink, { listVersions: undefined });
    const direct = await collectStatus(blind, { now: NOW });
    return { viaDigest, direct, stateReads };
  }

  it('a night writes a digest of every state it wrote; status then reads no state file and answers the same', async () => {
    await onDestination(async ({ sink, night }) => {
      const first = await night();
      expect(await sink.list(DIGESTS_PREFIX)).toEqual([digestPath(first.runId)]);
      const { viaDigest, direct, stateReads } = await bothWays(sink);
      expect(direct.tasks).toHaveLength(SCHOOLS * 2);
      expect(viaDigest).toEqual(direct);
      expect(stateReads).toBe(0);
    });
  });

  it('the next night reads no state file either: planning and the first writes take the digest copies', async () => {
    await onDestination(async ({ sink, night }) => {
      await night();
      const prefix = new URL(sink.url).pathname.slice(1);
      await store.clearRequests();
      const second = await night();
      const gets = (await store.requests()).filter((r) => r.op === 'GetObject').map((r) => r.key.slice(prefix.length + 1));
      expect(gets.filter((k) => k.startsWith('_state/region='))).toEqual([]);
      const { viaDigest, direct } = await bothWays(sink);
      expect(direct.tasks.every((t) => t.last_run_id === second.runId)).toBe(true);
      expect(viaDigest).toEqual(direct);
    });
  });

  it('after a run of one school, the older digest still covers the others', async () => {
    await onDestination(async ({ sink, night }) => {
      await night();
      sb.control.update('A1001', 'achievements', (sb.control.records('A1001', 'achievements')[0] as { id: string }).id, { comment: 'x' });
      const second = await night({ schools: ['A1001'] });
      expect((await sink.list(DIGESTS_PREFIX)).at(-1)).toBe(digestPath(second.runId));
      const { viaDigest, direct, stateReads } = await bothWays(sink);
      expect(direct.tasks.filter((t) => t.last_run_id === second.runId).map((t) => t.school_id)).toEqual(['A1001', 'A1001']);
      expect(viaDigest).toEqual(direct);
      expect(stateReads).toBe(0);
    });
  });

  it('a state written since the digest (a webhook, a run killed before its digest) is read from its file; a purged one not at all', async () => {
    await onDestination(async ({ sink, night }) => {
      await night();
      const [changed, purged] = (await listStates(sink)).slice(0, 2);
      await updateState(sink, changed!.region, changed!.schoolId, (s) => {
        s.resources['achievements']!.watermark = '2029-12-31T00:00:00.000Z';
      });
      await sink.remove([statePath(purged!.region, purged!.schoolId)]);
      const { viaDigest, direct, stateReads } = await bothWays(sink);
      expect(direct.tasks.find((t) => t.school_id === changed!.schoolId && t.resource === 'achievements')?.watermark).toBe(
        '2029-12-31T00:00:00.000Z',
      );
      expect(direct.tasks.some((t) => t.school_id === purged!.schoolId)).toBe(false);
      expect(viaDigest).toEqual(direct);
      expect(stateReads).toBe(1);
    });
  });

  it('a damaged digest is named as a problem and its states are read from their files', async () => {
    await onDestination(async ({ sink, night }) => {
      const first = await night();
      await sink.writeAtomic(digestPath(first.runId), Buffer.from('not gzip'));
      const { viaDigest, direct, stateReads } = await bothWays(sink);
      expect(viaDigest.problems).toEqual([expect.stringContaining(`${digestPath(first.runId)}: unreadable`)]);
      expect({ ...viaDigest, problems: [] }).toEqual(direct);
      expect(stateReads).toBe(SCHOOLS);
    });
  });

  it("a write's version is the ETag S3 answered, unquoted, and the listing shows the same until the object changes", async () => {
    await onDestination(async ({ sink }) => {
      const v1 = await sink.writeAtomic('_state/_probe.json', '{"a":1}');
      expect(v1).toMatch(/^[0-9a-f]{32}$/);
      expect(await sink.listVersions!('_state/_probe')).toEqual([{ path: '_state/_probe.json', version: v1 }]);
      const v2 = await sink.writeAtomic('_state/_probe.json', '{"a":2}');
      expect(v2).not.toBe(v1);
      expect(await sink.listVersions!('_state/_probe')).toEqual([{ path: '_state/_probe.json', version: v2 }]);
    });
  });

  it(`keeps the newest ${DIGESTS_KEPT} digests`, async () => {
    await onDestination(async ({ sink }) => {
      const ids = Array.from({ length: DIGESTS_KEPT + 3 }, (_, i) => `20290101T0000${String(i).padStart(2, '0')}.000Z-ab12`);
      for (const id of ids) await sink.writeAtomic(digestPath(id), Buffer.alloc(0));
      await pruneDigests(sink);
      expect(await sink.list(DIGESTS_PREFIX)).toEqual(ids.slice(3).map(digestPath));
    });
  });
});

describe('state digests (local disk)', () => {
  it('a local destination has no digest (its listing has no version tags): status reads the files, quickly there', async () => {
    const sb = await startSandbox({ seed: 11, schools: 2, achievementsPerSchool: 3 });
    const tmp = tempDir('digest-local-');
    try {
      await exportOnce(sb, tmp.dir, { format: 'ndjson', resources: ['schools'] });
      const sink = new LocalSink(tmp.dir);
      expect(await sink.list(DIGESTS_PREFIX)).toEqual([]);
      expect((await DigestedStates.read(sink, await listStates(sink))).size).toBe(0);
      expect((await collectStatus(sink, { now: NOW })).tasks).toHaveLength(2);
    } finally {
      tmp.cleanup();
      await sb.close();
    }
  });
});
