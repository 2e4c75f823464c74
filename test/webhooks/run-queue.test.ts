import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { statusCommandRun } from '../../src/cli/status.ts';
import type { Manifest } from '../../src/manifest/types.ts';
import { shardOf } from '../../src/pipeline/shard.ts';
import { LocalSink } from '../../src/sink/local.ts';
import type { Sink } from '../../src/sink/types.ts';
import { processRunner, runArgs, summaryRunId, type RunOutcome, type RunRequest } from '../../src/webhooks/child-run.ts';
import { laneOf } from '../../src/webhooks/lanes.ts';
import { QUEUE_PATH, readWebhookQueue, renderWebhookQueue } from '../../src/webhooks/queue-file.ts';
import { RunQueue, type RunQueueOptions } from '../../src/webhooks/run-queue.ts';
import { schoolResults } from '../../src/webhooks/run-results.ts';
import { ManualTimers, until } from './manual-timers.ts';

/**
 * The queue's own rules with a scripted runner: each run is a promise the test settles, writing
 * the run manifest a real run would (queue-sandbox.test.ts runs the real pipeline).
 */
let root: string;
let sink: LocalSink;
let queue: RunQueue | undefined;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'wh-rq-'));
  await mkdir(join(root, 'dest'));
  sink = new LocalSink(join(root, 'dest'));
});
afterEach(async () => {
  await queue?.close();
  queue = undefined;
  await rm(root, { recursive: true, force: true });
});

interface Scripted {
  req: RunRequest;
  stopped: boolean;
  ended: boolean;
  /** Ends the run: the listed schools committed (a manifest is written), the others failed. */
  end(committed: string[], o?: Partial<RunOutcome>): Promise<void>;
}

function scriptedRunner(dest: Sink) {
  const runs: Scripted[] = [];
  const going = new Map<number, number>(); // shard index -> runs going
  let most = { total: 0, perShard: 0 };
  let n = 0;
  const runner = (req: RunRequest) => {
    let settle!: (o: RunOutcome) => void;
    const done = new Promise<RunOutcome>((r) => (settle = r)).finally(() => {
      run.ended = true;
      going.set(req.shard.index, going.get(req.shard.index)! - 1);
    });
    going.set(req.shard.index, (going.get(req.shard.index) ?? 0) + 1);
    const total = [...going.values()].reduce((a, b) => a + b, 0);
    most = { total: Math.max(most.total, total), perShard: Math.max(most.perShard, ...going.values()) };
    const run: Scripted = {
      req,
      stopped: false,
      ended: false,
      async end(committed, o = {}) {
        const runId = `20261122T0100${String(n++).padStart(2, '0')}.000Z-test`;
        const m: Manifest = {
          version: 1,
          run_id: runId,
          started_at: '2026-11-22T01:00:00.000Z',
          finished_at: '2026-11-22T01:00:01.000Z',
          format: 'ndjson',
          status: committed.length === req.schools.length ? 'ok' : 'partial',
          tasks: req.schools.map((id) => ({
            school_id: id,
            region: 'uk',
            resource: 'achievements',
            mode: 'full',
            files: [],
            rows: {},
            ...(committed.includes(id) ? { status: 'committed' } : { status: 'failed', error: { code: 'E_HTTP', message: 'HTTP 500' } }),
          })) as Manifest['tasks'],
          deletions: [],
        };
        await dest.writeAtomic(`_manifests/${runId}.json`, JSON.stringify(m) + '\n');
        settle({ code: m.status === 'ok' ? 0 : 1, signal: null, runId, ...o });
      },
    };
    runs.push(run);
    return {
      done,
      stop: () => {
        run.stopped = true;
        settle({ code: 143, signal: null });
      },
    };
  };
  /** Ends every run as it starts, all its schools committed, until the queue is empty. */
  const drain = async (q: RunQueue) => {
    for (;;) {
      await until(() => runs.some((r) => !r.ended) || (q.snapshot().waiting.length === 0 && q.snapshot().running.length === 0));
      const run = runs.find((r) => !r.ended);
      if (!run) return;
      await run.end(run.req.schools);
      await until(() => run.ended);
    }
  };
  return { runner, runs, drain, most: () => most };
}

async function openQueue(o: Partial<RunQueueOptions> & Pick<RunQueueOptions, 'runner'>, logs: any[] = []) {
  queue = await RunQueue.open({ sink, log: (e) => logs.push(e), collectMs: 0, ...o });
  return queue;
}

describe('run queue', () => {
  it('shards of --max-runs follow the pipeline shard hash', () => {
    for (let i = 0; i < 500; i++)
      for (const n of [1, 2, 3, 7]) expect(laneOf(`A${1000 + i * 37}`, n)).toBe(shardOf(`A${1000 + i * 37}`, n));
  });

  it('--max-runs 2: two runs at once, never two for the same shard, each with only its own schools', async () => {
    const { runner, runs, drain, most } = scriptedRunner(sink);
    const timers = new ManualTimers();
    const q = await openQueue({ runner, timers, maxRuns: 2, collectMs: 1000 });
    const ids = Array.from({ length: 12 }, (_, i) => `A${2001 + i}`);
    for (const id of ids) await q.add(id);
    timers.advance(1000);
    await until(() => runs.length === 2);
    const byShard = (r: Scripted) => r.req.shard.index;
    expect(runs.map((r) => `${r.req.shard.index}/${r.req.shard.count}`).sort()).toEqual(['0/2', '1/2']);
    for (const r of runs) expect(r.req.schools.every((id) => shardOf(id, 2) === byShard(r))).toBe(true);
    expect(runs.flatMap((r) => r.req.schools).sort()).toEqual(ids);
    // more approvals for both shards while both run: nothing new starts until a shard's run ends
    await q.add('A3001');
    await q.add('A3002');
    await q.add('A3003');
    expect(runs).toHaveLength(2);
    expect(
      q
        .snapshot()
        .running.map((r) => r.shard)
        .sort(),
    ).toEqual(['0/2', '1/2']);
    await drain(q);
    await q.whenIdle();
    expect(runs.flatMap((r) => r.req.schools).sort()).toEqual([...ids, 'A3001', 'A3002', 'A3003'].sort());
    for (const r of runs) expect(r.req.schools.every((id) => shardOf(id, 2) === byShard(r))).toBe(true);
    expect(most()).toEqual({ total: 2, perShard: 1 });
  });

  it('--run-timeout stops a run that goes on too long; its schools are retried with backoff', async () => {
    const { runner, runs } = scriptedRunner(sink);
    const timers = new ManualTimers();
    const logs: any[] = [];
    const q = await openQueue({ runner, timers, runTimeoutSeconds: 600 }, logs);
    await q.add('A5001');
    await until(() => runs.length === 1);
    timers.advance(599_000);
    expect(runs[0]!.stopped).toBe(false);
    timers.advance(1000);
    expect(runs[0]!.stopped).toBe(true);
    await q.whenIdle();
    expect(logs.find((l) => l.event === 'run_timeout')).toMatchObject({ level: 'warn', seconds: 600 });
    expect(q.snapshot().waiting).toMatchObject([
      { school_id: 'A5001', attempts: 1, last_error: expect.stringMatching(/^the run was stopped after 600 s \(the run exited 143/) },
    ]);
    timers.advance(30_000);
    await until(() => runs.length === 2);
    await runs[1]!.end(['A5001']);
    await q.whenIdle();
    expect(logs.filter((l) => l.event === 'school_outcome')).toMatchObject([{ school_id: 'A5001', level: 'info', outcome: 'exported' }]);
  });

  it('an approval while its school is in a run queues one more run; a backoff is cancelled by a new approval', async () => {
    const { runner, runs } = scriptedRunner(sink);
    const timers = new ManualTimers();
    const q = await openQueue({ runner, timers });
    await q.add('A6001');
    await until(() => runs.length === 1);
    await q.add('A6001'); // the running run may have planned before this approval's directive
    expect(q.snapshot().waiting.map((w) => w.school_id)).toEqual(['A6001']);
    await runs[0]!.end([]); // failed: the newer request stands, no backoff
    await until(() => runs.length === 2);
    await runs[1]!.end([]);
    await q.whenIdle();
    expect(q.snapshot().waiting).toMatchObject([{ school_id: 'A6001', attempts: 1, not_before: expect.any(String) }]);
    await q.add('A6001');
    await until(() => runs.length === 3);
    await runs[2]!.end(['A6001']);
    await q.whenIdle();
    expect(q.snapshot().waiting).toEqual([]);
  });

  it('a burst of approvals costs a few queue writes, not one each, and each add resolves once saved', async () => {
    let writes = 0;
    const counting: Sink = Object.create(sink, {
      writeAtomic: {
        value: async (p: string, d: string | Buffer) => {
          if (p === QUEUE_PATH) writes += 1;
          return sink.writeAtomic(p, d);
        },
      },
    });
    const { runner } = scriptedRunner(sink);
    queue = await RunQueue.open({ sink: counting, runner, log: () => {}, timers: new ManualTimers() });
    writes = 0;
    const ids = Array.from({ length: 100 }, (_, i) => `A${7001 + i}`);
    await Promise.all(ids.map((id) => queue!.add(id)));
    expect(writes).toBeLessThanOrEqual(3);
    expect((await readWebhookQueue(sink))!.waiting).toHaveLength(100);
  });

  it('a queue file that is not one stops the start, naming the file', async () => {
    await sink.writeAtomic(QUEUE_PATH, '{"version":1,"waiting":[{"school_id":"../x"}],"running":[]}');
    const { runner } = scriptedRunner(sink);
    await expect(openQueue({ runner })).rejects.toThrow(/_state\/_webhooks\/queue\.json at .* is unreadable \(unsafe school id/);
    await sink.writeAtomic(QUEUE_PATH, 'not json');
    await expect(openQueue({ runner })).rejects.toThrow(/queue\.json .*unreadable.*delete it/);
  });

  it('status prints the queue: a few lines on a terminal, one webhook_queue object as JSON', async () => {
    const { runner, runs } = scriptedRunner(sink);
    const q = await openQueue({ runner, timers: new ManualTimers() });
    await q.add('A8001');
    await until(() => runs.length === 1);
    await q.add('A8002');
    await q.add('A8003');
    const text = renderWebhookQueue((await readWebhookQueue(sink))!);
    expect(text).toMatch(
      /^WEBHOOK QUEUE \(receiver pid \d+ on .*, updated .*\)\n {2}running since .* \(on .*, shard 0\/1\): 1 schools: A8001\n {2}2 schools waiting: A8002, A8003\n$/,
    );
    let out = '';
    const io = { out: new Writable({ write: (c, _e, cb) => ((out += c), cb()) }), err: process.stderr };
    await statusCommandRun({ dest: join(root, 'dest'), json: true }, io as never);
    const line = out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .find((o) => o.type === 'webhook_queue');
    expect(line).toMatchObject({
      running: [{ schools: ['A8001'], shard: '0/1' }],
      waiting: [{ school_id: 'A8002' }, { school_id: 'A8003' }],
    });
    out = '';
    Object.assign(io.out, { isTTY: true }); // a person at a terminal
    await statusCommandRun({ dest: join(root, 'dest') }, io as never);
    expect(out).toContain('2 schools waiting: A8002, A8003');
    await runs[0]!.end(['A8001']);
  });
});

describe('what a run did, from its manifest', () => {
  it('reads the whole-run manifest and the parts beside it; a run without a whole-run manifest retries all its schools', async () => {
    const runId = '20261122T011558.123Z-3f9a';
    const task = (school_id: string, status: string, error?: { code: string; message: string }) => ({
      school_id,
      region: 'uk',
      resource: 'achievements',
      status,
      mode: 'full',
      files: [],
      rows: {},
      ...(error ? { error } : {}),
    });
    const doc = (o: Record<string, unknown>) => JSON.stringify({ version: 1, run_id: runId, format: 'ndjson', deletions: [], ...o }) + '\n';
    await sink.writeAtomic(`_manifests/${runId}/part-00001.json`, doc({ status: 'running', part: 1, tasks: [task('A1', 'committed')] }));
    expect(await schoolResults(sink, ['A1', 'A2'], { code: null, signal: 'SIGKILL', runId })).toEqual(
      new Map([
        ['A1', { kind: 'retry', reason: 'the run was killed (SIGKILL) without a run manifest' }],
        ['A2', { kind: 'retry', reason: 'the run was killed (SIGKILL) without a run manifest' }],
      ]),
    );
    await sink.writeAtomic(
      `_manifests/${runId}/part-00002.json`,
      doc({
        status: 'running',
        part: 2,
        tasks: [
          task('A2', 'failed', { code: 'E_HTTP', message: 'HTTP 500 at /schools/A2/achievements' }),
          task('A3', 'skipped', { code: 'E_SCHOOL_INACTIVE', message: 'school A3 is inactive' }),
          task('A4', 'unchanged'),
          task('A6', 'skipped', { code: 'E_PURGED', message: 'school A6: access revoked while the run was reading it' }),
        ],
      }),
    );
    // the run manifest of the bounded layout (version 2): it leaves its tasks to the parts it names
    const part = (n: number) => ({ path: `_manifests/${runId}/part-0000${n}.json`, part: n, tasks: 1, bytes: 1 });
    await sink.writeAtomic(
      `_manifests/${runId}.json`,
      JSON.stringify({
        version: 2,
        layout: 'parts',
        kind: 'export',
        run_id: runId,
        format: 'ndjson',
        status: 'partial',
        parts: [part(1), part(2)],
      }) + '\n',
    );
    await sink.writeAtomic(
      '_state/_directives/school_id=A5.json',
      JSON.stringify({
        version: 1,
        school_id: 'A5',
        force_full_seq: 1,
        deactivated: { reason: 'r', at: 'x', event: 'accessDeclined 0123' },
        updated_at: 'x',
      }),
    );
    const results = await schoolResults(sink, ['A1', 'A2', 'A3', 'A4', 'A5', 'A6', 'A7'], { code: 1, signal: null, runId });
    expect(Object.fromEntries(results)).toEqual({
      A1: { kind: 'exported' },
      A2: { kind: 'retry', reason: 'achievements: HTTP 500 at /schools/A2/achievements' },
      A3: { kind: 'deferred', reason: 'school A3 is inactive' },
      A4: { kind: 'exported' },
      A5: { kind: 'dropped', reason: 'access accessDeclined 0123: r' },
      A6: { kind: 'dropped', reason: 'school A6: access revoked while the run was reading it' },
      A7: { kind: 'deferred', reason: 'the run planned nothing for it' },
    });
  });
});

describe('the child process runner', () => {
  it('passes the schools, shard, lease wait and destination; refuses an unsafe id', () => {
    const req = { schools: ['A1', 'A22'], shard: { index: 1, count: 3 }, waitForLockSeconds: 900 };
    expect(runArgs({ pipeline: 'p.json', dest: 's3://b/x', s3Endpoint: 'http://minio:9000' }, req)).toEqual([
      'run',
      'p.json',
      '--schools',
      'A1,A22',
      '--shard',
      '1/3',
      '--wait-for-lock',
      '900',
      '--json',
      '--dest',
      's3://b/x',
      '--s3-endpoint',
      'http://minio:9000',
    ]);
    expect(() => runArgs({ pipeline: 'p.json' }, { ...req, schools: ['A1;rm'] })).toThrow(/refusing/);
    expect(summaryRunId('progress\n{"runId":"20261122T011558.123Z-3f9a","status":"ok"}\n')).toBe('20261122T011558.123Z-3f9a');
    expect(summaryRunId('{"runId":"../x"}')).toBeUndefined();
    expect(summaryRunId('')).toBeUndefined();
  });

  it("reads the run id from the summary, passes the run's stderr on and keeps its error line", async () => {
    let err = '';
    const stderr = new Writable({ write: (c, _e, cb) => ((err += c), cb()) });
    const script = [
      `process.stderr.write('{"event":"run_start"}\\nschool-export: it went wrong\\n');`,
      `process.stdout.write(JSON.stringify({ runId: '20261122T011558.123Z-3f9a', args: process.argv.slice(1) }) + '\\n');`,
      'process.exitCode = 1;',
    ].join('');
    const run = processRunner({ pipeline: 'p.json', stderr, command: { cmd: process.execPath, args: ['-e', script, '--'] } })({
      schools: ['A1'],
      shard: { index: 0, count: 1 },
      waitForLockSeconds: 5,
    });
    expect(typeof run.pid).toBe('number');
    expect(await run.done).toEqual({ code: 1, signal: null, runId: '20261122T011558.123Z-3f9a' });
    expect(err).toBe('{"event":"run_start"}\nschool-export: it went wrong\n');

    const silent = processRunner({
      pipeline: 'p.json',
      stderr,
      command: { cmd: process.execPath, args: ['-e', script.split(';process.stdout')[0]!] },
    });
    expect(await silent({ schools: ['A1'], shard: { index: 0, count: 1 }, waitForLockSeconds: 5 }).done).toEqual({
      code: 0,
      signal: null,
      error: 'school-export: it went wrong',
    });
    const missing = processRunner({ pipeline: 'p.json', command: { cmd: join(root, 'no-such-program'), args: [] } });
    expect(await missing({ schools: ['A1'], shard: { index: 0, count: 1 }, waitForLockSeconds: 5 }).done).toMatchObject({
      code: null,
      error: expect.stringMatching(/^the run could not start: .*ENOENT/),
    });
  });
});
