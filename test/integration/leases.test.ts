import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { acquireLease, HEARTBEAT_MS, leasePath, STALE_AFTER_MS, type Lease, type LeaseRecord } from '../../src/manifest/lease.ts';
import { runExport } from '../../src/pipeline/run.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { openSink, type Sink } from '../../src/sink/index.ts';
import { logEvents, runChild } from './child-run.ts';
import { sandboxConfig, tempDir } from './helpers.ts';
import { readRunManifest } from '../helpers/read-exports.ts';

/**
 * One run per destination and shard (issue 9, "Interrupts, locks and exit codes"): the lease
 * API with an injected clock, then whole runs, in-process and as separate processes, held at a
 * known page by the sandbox while a second run tries the same destination.
 */

const T0 = Date.parse('2030-05-01T08:00:00.000Z');

/** A clock that moves only when the lease code sleeps on it. */
function fakeTime(start = T0) {
  let t = start;
  const slept: number[] = [];
  return {
    now: () => new Date(t),
    sleep: async (ms: number) => {
      slept.push(ms);
      t += ms;
    },
    advance: (ms: number) => (t += ms),
    slept,
  };
}

const one = { index: 0, count: 1 };

function lease(overrides: Partial<LeaseRecord> = {}): LeaseRecord {
  const at = new Date(T0).toISOString();
  return { run_id: '20300501T075900.000Z-dead', host: hostname(), pid: 4_000_000, started_at: at, heartbeat_at: at, ...overrides };
}

/** A pid that belonged to a process of this host and no longer does. */
function deadPid(): number {
  return Number(execFileSync('sh', ['-c', 'echo $$']).toString().trim());
}

describe('acquireLease (injected clock, sleep and liveness)', () => {
  const tmps: { cleanup(): void }[] = [];
  const held: Lease[] = [];
  async function sinkAt(): Promise<{ sink: Sink; dir: string }> {
    const tmp = tempDir('lease-');
    tmps.push(tmp);
    return { sink: await openSink(tmp.dir), dir: tmp.dir };
  }
  afterEach(async () => {
    vi.useRealTimers();
    for (const l of held.splice(0)) await l.release();
    for (const t of tmps.splice(0)) t.cleanup();
  });

  it('takes the lease with run id, host, pid, start and heartbeat; release removes it', async () => {
    const { sink, dir } = await sinkAt();
    const clock = fakeTime();
    const l = await acquireLease(sink, { runId: 'RUN-A', shard: one, waitSeconds: 0, now: clock.now, sleep: clock.sleep });
    expect(l.path).toBe('_state/_locks/run.json');
    const record = JSON.parse(readFileSync(join(dir, l.path), 'utf8'));
    expect(record).toEqual({
      run_id: 'RUN-A',
      host: hostname(),
      pid: process.pid,
      started_at: new Date(T0).toISOString(),
      heartbeat_at: new Date(T0).toISOString(),
    });
    await l.release();
    expect(existsSync(join(dir, l.path))).toBe(false);
    expect(clock.slept).toEqual([]);
  });

  it('a live holder refuses a second run at once: E_LOCKED, one line naming the run id, host and pid and the way to wait', async () => {
    const { sink } = await sinkAt();
    const clock = fakeTime();
    held.push(await acquireLease(sink, { runId: 'RUN-A', shard: one, waitSeconds: 0, now: clock.now, sleep: clock.sleep }));
    const err = await acquireLease(sink, { runId: 'RUN-B', shard: one, waitSeconds: 0, now: clock.now, sleep: clock.sleep }).catch(
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ code: 'E_LOCKED' });
    const message = (err as Error).message;
    expect(message.split('\n')).toHaveLength(1);
    expect(message).toContain(`run RUN-A on ${hostname()} (pid ${process.pid})`);
    expect(message).toContain('--wait-for-lock');
    expect(clock.slept).toEqual([]);
  });

  it('--wait-for-lock: waits on the clock while the holder lives, says so once, and takes the lease when it is released', async () => {
    const { sink, dir } = await sinkAt();
    const clock = fakeTime();
    const first = await acquireLease(sink, { runId: 'RUN-A', shard: one, waitSeconds: 0, now: clock.now, sleep: clock.sleep });
    const waits: string[] = [];
    const sleep = async (ms: number) => {
      await clock.sleep(ms);
      if (clock.slept.length === 3) await first.release(); // the holder finishes during the third wait
    };
    const second = await acquireLease(sink, {
      runId: 'RUN-B',
      shard: one,
      waitSeconds: 600,
      now: clock.now,
      sleep,
      onWait: (h) => waits.push(h),
    });
    held.push(second);
    expect(waits).toEqual([expect.stringContaining(`run RUN-A on ${hostname()} (pid ${process.pid})`)]);
    expect(clock.slept).toHaveLength(3);
    expect(clock.slept.every((ms) => ms > 0 && ms <= 5_000)).toBe(true);
    expect(JSON.parse(readFileSync(join(dir, second.path), 'utf8')).run_id).toBe('RUN-B');
  });

  it('--wait-for-lock N gives up after N seconds of the clock, not sooner and not later', async () => {
    const { sink } = await sinkAt();
    const clock = fakeTime();
    held.push(await acquireLease(sink, { runId: 'RUN-A', shard: one, waitSeconds: 0, now: clock.now, sleep: clock.sleep }));
    await expect(
      acquireLease(sink, { runId: 'RUN-B', shard: one, waitSeconds: 12, now: clock.now, sleep: clock.sleep }),
    ).rejects.toMatchObject({ code: 'E_LOCKED', message: expect.stringContaining('still held after waiting 12 s') });
    expect(clock.slept.reduce((a, b) => a + b, 0)).toBe(12_000);
  });

  it('a heartbeat older than five minutes is stale and taken over, even when its pid is alive; five minutes exactly is not', async () => {
    const { sink, dir } = await sinkAt();
    mkdirSync(join(dir, '_state/_locks'), { recursive: true });
    const clock = fakeTime();
    const alive = () => true;
    const beat = new Date(T0 - STALE_AFTER_MS).toISOString();
    writeFileSync(join(dir, '_state/_locks/run.json'), JSON.stringify(lease({ heartbeat_at: beat, host: 'elsewhere' })));
    await expect(
      acquireLease(sink, { runId: 'RUN-B', shard: one, waitSeconds: 0, now: clock.now, sleep: clock.sleep, alive }),
    ).rejects.toMatchObject({ code: 'E_LOCKED' });
    clock.advance(1);
    const l = await acquireLease(sink, { runId: 'RUN-B', shard: one, waitSeconds: 0, now: clock.now, sleep: clock.sleep, alive });
    held.push(l);
    expect(JSON.parse(readFileSync(join(dir, l.path), 'utf8')).run_id).toBe('RUN-B');
  });

  it('a lease whose process is gone from this host is taken over at once; on another host the pid says nothing', async () => {
    const { sink, dir } = await sinkAt();
    mkdirSync(join(dir, '_state/_locks'), { recursive: true });
    const clock = fakeTime();
    const path = join(dir, '_state/_locks/run.json');
    writeFileSync(path, JSON.stringify(lease({ host: 'another-host', pid: deadPid() })));
    await expect(
      acquireLease(sink, { runId: 'RUN-B', shard: one, waitSeconds: 0, now: clock.now, sleep: clock.sleep }),
    ).rejects.toMatchObject({
      code: 'E_LOCKED',
      message: expect.stringContaining('on another-host'),
    });
    writeFileSync(path, JSON.stringify(lease({ pid: deadPid() })));
    const l = await acquireLease(sink, { runId: 'RUN-B', shard: one, waitSeconds: 0, now: clock.now, sleep: clock.sleep });
    held.push(l);
    expect(JSON.parse(readFileSync(path, 'utf8'))).toMatchObject({ run_id: 'RUN-B', pid: process.pid });
  });

  it('a torn lease file (not JSON) holds nothing and is replaced', async () => {
    const { sink, dir } = await sinkAt();
    mkdirSync(join(dir, '_state/_locks'), { recursive: true });
    writeFileSync(join(dir, '_state/_locks/run.json'), '{"run_id": "RUN-');
    const clock = fakeTime();
    const l = await acquireLease(sink, { runId: 'RUN-B', shard: one, waitSeconds: 0, now: clock.now, sleep: clock.sleep });
    held.push(l);
    expect(JSON.parse(readFileSync(join(dir, l.path), 'utf8')).run_id).toBe('RUN-B');
  });

  it('shards hold separate leases: 0/2 and 1/2 at once, a second 0/2 is refused', async () => {
    const { sink, dir } = await sinkAt();
    const clock = fakeTime();
    const o = { waitSeconds: 0, now: clock.now, sleep: clock.sleep };
    const s0 = await acquireLease(sink, { ...o, runId: 'RUN-S0', shard: { index: 0, count: 2 } });
    const s1 = await acquireLease(sink, { ...o, runId: 'RUN-S1', shard: { index: 1, count: 2 } });
    held.push(s0, s1);
    expect([s0.path, s1.path]).toEqual(['_state/_locks/run-s0of2.json', '_state/_locks/run-s1of2.json']);
    expect(leasePath({ index: 1, count: 2 })).toBe(s1.path);
    await expect(acquireLease(sink, { ...o, runId: 'RUN-X', shard: { index: 0, count: 2 } })).rejects.toMatchObject({
      code: 'E_LOCKED',
      message: expect.stringContaining('run RUN-S0'),
    });
    expect(JSON.parse(readFileSync(join(dir, s0.path), 'utf8')).run_id).toBe('RUN-S0');
  });

  it('the heartbeat keeps a long run’s lease fresh: past five minutes it is still held', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const { sink, dir } = await sinkAt();
    const clock = fakeTime();
    // The heartbeat rewrites the lease through the sink: note each rewrite to await it.
    const beats: Promise<unknown>[] = [];
    const observed: Sink = Object.assign(Object.create(sink) as Sink, {
      writeAtomic: (p: string, d: string | Buffer) => {
        const w = sink.writeAtomic(p, d);
        if (p === '_state/_locks/run.json') beats.push(w); // not the store check's record
        return w;
      },
    });
    held.push(await acquireLease(observed, { runId: 'RUN-A', shard: one, waitSeconds: 0, now: clock.now, sleep: clock.sleep }));
    for (let i = 1; i <= 6; i++) {
      clock.advance(HEARTBEAT_MS);
      vi.advanceTimersByTime(HEARTBEAT_MS);
      await Promise.all(beats);
    }
    expect(beats).toHaveLength(6);
    const record = JSON.parse(readFileSync(join(dir, '_state/_locks/run.json'), 'utf8'));
    expect(record.heartbeat_at).toBe(new Date(T0 + 6 * HEARTBEAT_MS).toISOString());
    expect(record.started_at).toBe(new Date(T0).toISOString());
    await expect(
      acquireLease(sink, { runId: 'RUN-B', shard: one, waitSeconds: 0, now: clock.now, sleep: clock.sleep, alive: () => true }),
    ).rejects.toMatchObject({ code: 'E_LOCKED' });
  });

  it('releasing a lease another run took over leaves the other run’s lease alone', async () => {
    const { sink, dir } = await sinkAt();
    const clock = fakeTime();
    const a = await acquireLease(sink, { runId: 'RUN-A', shard: one, waitSeconds: 0, now: clock.now, sleep: clock.sleep });
    clock.advance(STALE_AFTER_MS + 1); // A stalled (no heartbeat on this clock): B takes over
    const b = await acquireLease(sink, { runId: 'RUN-B', shard: one, waitSeconds: 0, now: clock.now, sleep: clock.sleep });
    held.push(b);
    await a.release();
    expect(JSON.parse(readFileSync(join(dir, b.path), 'utf8')).run_id).toBe('RUN-B');
  });

  it('two runs that find the same stale lease: only one of them takes it over', async () => {
    const { sink, dir } = await sinkAt();
    mkdirSync(join(dir, '_state/_locks'), { recursive: true });
    const stale = lease({ pid: deadPid() });
    writeFileSync(join(dir, '_state/_locks/run.json'), JSON.stringify(stale));
    const clock = fakeTime();
    // B reads the stale lease and judges it; just before B changes anything, A runs and takes
    // the lease over; then B goes on with what it judged. (The real sink does every operation;
    // the wrappers only decide who goes when.)
    let bJudged!: () => void;
    const bJudgedGate = new Promise<void>((r) => (bJudged = r));
    let aSettled!: () => void;
    const aSettledGate = new Promise<void>((r) => (aSettled = r));
    let sawStale = false;
    const b: Sink = Object.assign(Object.create(sink) as Sink, {
      read: async (p: string) => {
        const out = await sink.read(p);
        if (out?.toString().includes(stale.run_id)) sawStale = true;
        return out;
      },
      remove: async (paths: string[]) => {
        if (sawStale) {
          bJudged();
          await aSettledGate;
        }
        return sink.remove(paths);
      },
      createExclusive: async (p: string, d: string | Buffer) => {
        if (sawStale) {
          bJudged();
          await aSettledGate;
        }
        return sink.createExclusive(p, d);
      },
    });
    const a: Sink = Object.assign(Object.create(sink) as Sink, {
      createExclusive: async (p: string, d: string | Buffer) => {
        await bJudgedGate;
        return sink.createExclusive(p, d);
      },
    });
    const o = { shard: one, waitSeconds: 0, now: clock.now, sleep: clock.sleep };
    const runB = acquireLease(b, { ...o, runId: 'RUN-B' }).finally(() => bJudged());
    const runA = acquireLease(a, { ...o, runId: 'RUN-A' }).finally(() => aSettled());
    const results = await Promise.allSettled([runA, runB]);
    for (const r of results) if (r.status === 'fulfilled') held.push(r.value);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected']);
    expect(results[1]).toMatchObject({ reason: { code: 'E_LOCKED', message: expect.stringContaining('run RUN-A') } });
    expect(JSON.parse(readFileSync(join(dir, '_state/_locks/run.json'), 'utf8')).run_id).toBe('RUN-A');
  });
});

describe('one run per destination and shard, whole runs', () => {
  let sb: Sandbox;
  // A1001 is in shard 0 of 2, A1002 in shard 1 (shardOf: a stable hash of the id).
  const achievementsOf = (school: string) => [
    '--format',
    'ndjson',
    '--schools',
    school,
    '--resources',
    'achievements',
    '--concurrency',
    '1',
  ];
  const lockFile = (dir: string, name = 'run.json') => join(dir, '_state/_locks', name);
  const readLock = (dir: string, name?: string): LeaseRecord => JSON.parse(readFileSync(lockFile(dir, name), 'utf8')) as LeaseRecord;
  const writeLock = (dir: string, record: LeaseRecord) => {
    mkdirSync(join(dir, '_state/_locks'), { recursive: true });
    writeFileSync(lockFile(dir), JSON.stringify(record));
  };

  beforeAll(async () => {
    sb = await startSandbox({ seed: 41, schools: 2, achievementsPerSchool: 60 });
  });
  afterAll(async () => {
    await sb?.close();
  });

  it('a second run on a held destination exits 2 at once with one line naming the holder, and sends no request', async () => {
    const tmp = tempDir('locked-');
    try {
      sb.control.clearRequests();
      const hold = sb.control.hold({ school: 'A1001', resource: 'achievements', page: 1 });
      const first = runChild(sb, ['--dest', tmp.dir, ...achievementsOf('A1001')]);
      await hold.reached; // the first run holds the lease and waits for its one page: it sends nothing more
      const holder = readLock(tmp.dir);
      expect(holder).toMatchObject({ host: hostname(), pid: first.child.pid });
      const before = sb.control.requests().length;

      const second = await runChild(sb, ['--dest', tmp.dir, ...achievementsOf('A1001')]).done;
      expect(second.code).toBe(2);
      expect(sb.control.requests()).toHaveLength(before);
      expect(second.stdout).toBe('');
      const lines = second.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^school-export: .* is being exported by run /);
      expect(lines[0]).toContain(`run ${holder.run_id} on ${holder.host} (pid ${holder.pid})`);
      expect(lines[0]).toContain('--wait-for-lock');
      expect(readLock(tmp.dir)).toEqual(holder); // the refused run leaves the holder's lease alone

      hold.release();
      const ended = await first.done;
      expect(ended.code, ended.stderr).toBe(0);
      expect(existsSync(lockFile(tmp.dir))).toBe(false);
    } finally {
      tmp.cleanup();
    }
  });

  it('--wait-for-lock: the second run waits (saying for whom), sends nothing meanwhile, and runs once the first has finished', async () => {
    const tmp = tempDir('wait-lock-');
    try {
      sb.control.clearRequests();
      const hold = sb.control.hold({ school: 'A1001', resource: 'achievements', page: 1 });
      const first = runChild(sb, ['--dest', tmp.dir, ...achievementsOf('A1001')]);
      await hold.reached;
      const holder = readLock(tmp.dir);
      const before = sb.control.requests().length;
      const second = runChild(sb, ['--dest', tmp.dir, ...achievementsOf('A1001'), '--wait-for-lock', '300']);
      const waiting = JSON.parse(await second.line(/"event":"lease_wait"/)) as { level: string; holder: string };
      expect(waiting.level).toBe('warn');
      expect(waiting.holder).toContain(`run ${holder.run_id} on ${holder.host} (pid ${holder.pid})`);
      expect(sb.control.requests()).toHaveLength(before);

      hold.release();
      const [a, b] = await Promise.all([first.done, second.done]);
      expect(a.code, a.stderr).toBe(0);
      expect(b.code, b.stderr).toBe(0);
      const summaryA = JSON.parse(a.stdout) as { runId: string };
      const summaryB = JSON.parse(b.stdout) as { runId: string; status: string; tasks: { committed: number } };
      expect(summaryB).toMatchObject({ status: 'ok', tasks: { committed: 1 } });
      // The second run began after the first had committed: it read incrementally from the first's watermark.
      const manifestB = readRunManifest(tmp.dir, summaryB.runId) as {
        tasks: { mode: string }[];
      };
      expect(manifestB.tasks.map((t) => t.mode)).toEqual(['incremental']);
      expect(summaryA.runId < summaryB.runId).toBe(true);
      expect(logEvents(b.stderr).filter((e) => e.event === 'lease_wait')).toHaveLength(1);
      expect(existsSync(lockFile(tmp.dir))).toBe(false);
    } finally {
      tmp.cleanup();
    }
  });

  it('one SIGINT stops a run waiting for the lock (--wait-for-lock): exit 130 without waiting out the wait, the holder untouched', async () => {
    const tmp = tempDir('wait-signal-');
    try {
      sb.control.clearRequests();
      const hold = sb.control.hold({ school: 'A1001', resource: 'achievements', page: 1 });
      const first = runChild(sb, ['--dest', tmp.dir, ...achievementsOf('A1001')]);
      await hold.reached;
      const holder = readLock(tmp.dir);
      const before = sb.control.requests().length;
      // A short wait bounds the test: a run that ignores the signal gives up only when it ends (exit 2).
      const second = runChild(sb, ['--dest', tmp.dir, ...achievementsOf('A1001'), '--wait-for-lock', '8']);
      await second.line(/"event":"lease_wait"/);
      second.child.kill('SIGINT');
      const stopped = await second.done;
      const firstStillHeld = first.child.exitCode === null;
      hold.release();
      expect((await first.done).code).toBe(0);
      expect(firstStillHeld).toBe(true);
      expect(
        sb.control
          .requests()
          .slice(before)
          .every((r) => r.path.includes('/schools/A1001/achievements')),
      ).toBe(true);
      expect({ code: stopped.code, stderr: stopped.stderr }).toMatchObject({ code: 130 });
      expect(stopped.stderr).not.toMatch(/E_LOCKED|still held after waiting/);
      expect(holder.pid).toBe(first.child.pid);
    } finally {
      tmp.cleanup();
    }
  });

  it('shards run at the same time on one destination, each under its own lease', async () => {
    const tmp = tempDir('shard-leases-');
    try {
      sb.control.clearRequests();
      const hold = sb.control.hold({ school: 'A1001', resource: 'achievements', page: 1 });
      const args = ['--dest', tmp.dir, '--format', 'ndjson', '--resources', 'achievements'];
      const shard0 = runChild(sb, [...args, '--shard', '0/2']);
      await hold.reached;
      expect(readLock(tmp.dir, 'run-s0of2.json').pid).toBe(shard0.child.pid);
      const shard1 = await runChild(sb, [...args, '--shard', '1/2']).done;
      expect(shard1.code, shard1.stderr).toBe(0);
      expect(JSON.parse(shard1.stdout)).toMatchObject({ status: 'ok', tasks: { committed: 1 } });
      expect(shard0.child.exitCode).toBeNull(); // shard 0 is still running, held at its page
      expect(existsSync(lockFile(tmp.dir, 'run-s1of2.json'))).toBe(false);
      expect(readLock(tmp.dir, 'run-s0of2.json').pid).toBe(shard0.child.pid);
      hold.release();
      const ended = await shard0.done;
      expect(ended.code, ended.stderr).toBe(0);
      expect(existsSync(lockFile(tmp.dir, 'run-s0of2.json'))).toBe(false);
    } finally {
      tmp.cleanup();
    }
  });

  it('a run of the whole destination and a run of one shard of it are not both let in (they would export the same schools)', async () => {
    const tmp = tempDir('mixed-shards-');
    try {
      sb.control.clearRequests();
      const hold = sb.control.hold({ school: 'A1001', resource: 'achievements', page: 1 });
      const whole = runExport(sandboxConfig(sb, tmp.dir, { format: 'ndjson', resources: ['achievements'] }), { token: sb.tokens.full });
      await hold.reached;
      const before = sb.control.requests().length;
      const shard = runExport(sandboxConfig(sb, tmp.dir, { format: 'ndjson', resources: ['achievements'], shard: '0/2' }), {
        token: sb.tokens.full,
      });
      const outcome = await shard.then(
        (s) => ({ ran: s.status, requests: sb.control.requests().length - before }),
        (e: unknown) => ({ refused: (e as { code?: string }).code }),
      );
      hold.release();
      expect((await whole).status).toBe('ok');
      expect(outcome).toEqual({ refused: 'E_LOCKED' });
    } finally {
      tmp.cleanup();
    }
  });

  it('a stale lease is taken over: a dead process of this host, or a heartbeat older than five minutes', async () => {
    const tmp = tempDir('stale-');
    try {
      const now = new Date().toISOString();
      writeLock(tmp.dir, lease({ pid: deadPid(), started_at: now, heartbeat_at: now }));
      const cfg = sandboxConfig(sb, tmp.dir, { format: 'ndjson', resources: ['school_meta'] });
      expect((await runExport(cfg, { token: sb.tokens.full })).status).toBe('ok');
      expect(existsSync(lockFile(tmp.dir))).toBe(false);

      const old = new Date(Date.now() - STALE_AFTER_MS - 60_000).toISOString();
      writeLock(tmp.dir, lease({ host: 'another-host', pid: 1, started_at: old, heartbeat_at: old }));
      expect((await runExport(cfg, { token: sb.tokens.full })).status).toBe('ok');
      expect(existsSync(lockFile(tmp.dir))).toBe(false);

      // ...but a live run on another host (a fresh heartbeat) is not: refused before any request
      writeLock(tmp.dir, lease({ host: 'another-host', pid: 1, started_at: now, heartbeat_at: now }));
      sb.control.clearRequests();
      await expect(runExport(cfg, { token: sb.tokens.full })).rejects.toMatchObject({
        code: 'E_LOCKED',
        message: expect.stringContaining('on another-host (pid 1)'),
      });
      expect(sb.control.requests()).toEqual([]);
      expect(existsSync(lockFile(tmp.dir))).toBe(true);
    } finally {
      tmp.cleanup();
    }
  });

  it('the lease is gone after a run that failed a task, a run stopped by an error, and a run interrupted by a signal', async () => {
    const tmp = tempDir('lease-gone-');
    try {
      const cfg = sandboxConfig(sb, tmp.dir, { format: 'ndjson', resources: ['achievements'], schools: ['A1001'], max_retries: 0 });
      sb.control.fault({ kind: '500', times: 1, path: '/schools/A1001/achievements?' });
      const failed = await runExport(cfg, { token: sb.tokens.full });
      sb.control.clearFaults();
      expect(failed.status).toBe('partial');
      expect(existsSync(lockFile(tmp.dir))).toBe(false);

      await expect(runExport(cfg, { token: 'not-the-token' })).rejects.toMatchObject({ code: 'E_AUTH' });
      expect(existsSync(lockFile(tmp.dir))).toBe(false);

      sb.control.clearRequests();
      const hold = sb.control.hold({ school: 'A1001', resource: 'achievements', page: 1 });
      const run = runChild(sb, ['--dest', tmp.dir, ...achievementsOf('A1001'), '--full-refresh']);
      await hold.reached;
      expect(readLock(tmp.dir).pid).toBe(run.child.pid);
      run.child.kill('SIGTERM');
      hold.release();
      const ended = await run.done;
      expect(ended.code).toBe(143);
      expect(JSON.parse(ended.stdout)).toMatchObject({ status: 'interrupted' });
      expect(existsSync(lockFile(tmp.dir))).toBe(false);
    } finally {
      sb.control.clearFaults();
      tmp.cleanup();
    }
  });
});
