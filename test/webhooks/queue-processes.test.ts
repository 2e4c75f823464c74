import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { LocalSink } from '../../src/sink/local.ts';
import { readWebhookQueue } from '../../src/webhooks/queue-file.ts';
import { readRunManifest } from '../helpers/read-exports.ts';
import { BIN } from '../integration/child-run.ts';

/**
 * `webhooks serve --run` as it runs in production: the receiver and its runs are processes (the
 * point here is process behaviour: one child at a time, SIGTERM passed on, the queue kept across
 * a restart). Few processes on purpose: two receivers and two runs.
 */
const SECRET = 'process-secret-0123456789abcdef';

interface Receiver {
  child: ChildProcess;
  events: any[];
  url: string;
  /** Resolves once `n` logged events match. */
  until(pred: (e: any) => boolean, n?: number): Promise<void>;
  exit: Promise<number | null>;
}

let root: string | undefined;
let sb: Sandbox | undefined;
const procs: ChildProcess[] = [];
afterEach(async () => {
  for (const p of procs.splice(0)) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  await sb?.close();
  sb = undefined;
  if (root) await rm(root, { recursive: true, force: true });
  root = undefined;
});

async function serve(args: string[]): Promise<Receiver> {
  const child = spawn(process.execPath, [BIN, 'webhooks', 'serve', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  procs.push(child);
  const events: any[] = [];
  const waiters: { pred: (e: any) => boolean; n: number; resolve: () => void }[] = [];
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  createInterface({ input: child.stderr! }).on('line', (l) => {
    if (!l.startsWith('{')) return; // the runs' own one-line messages pass through too
    events.push(JSON.parse(l));
    for (const w of [...waiters]) {
      if (events.filter(w.pred).length >= w.n) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  });
  const until = (pred: (e: any) => boolean, n = 1) =>
    Promise.race([
      new Promise<void>((resolve) => {
        waiters.push({ pred, n, resolve });
        if (events.filter(pred).length >= n) resolve();
      }),
      exit.then((code) => Promise.reject(new Error(`the receiver exited ${code}: ${JSON.stringify(events.slice(-5))}`))),
    ]);
  await until((e) => e.event === 'listening');
  const url = events.find((e) => e.event === 'listening').url.replace('<secret>', SECRET);
  return { child, events, url, until, exit };
}

/** The receiver's own run lines (the runs' log lines pass through the same stderr). */
const runLines = (r: Receiver) => r.events.filter((e) => e.event === 'run_started' || e.event === 'run_exit').map((e) => e.event);

describe('webhooks serve --run (processes)', () => {
  it('approvals wait for the one running child; SIGTERM stops it and keeps the queue; the next start exports them all', async () => {
    root = await mkdtemp(join(tmpdir(), 'wh-proc-'));
    const dest = join(root, 'dest');
    await mkdir(dest);
    sb = await startSandbox({ seed: 11, achievementsPerSchool: 2 });
    const approved = ['A1001', 'A1002', 'A1003', 'A1004', 'A1005', 'A1006'];
    for (const id of approved) await sb.control.setAccess(id, 'revoked'); // no webhook URL yet: the receiver hears nothing
    await writeFile(join(root, 'token'), sb.tokens.full + '\n', { mode: 0o600 });
    await writeFile(join(root, 'secret'), SECRET + '\n', { mode: 0o600 });
    const pipeline = join(root, 'pipeline.json');
    await writeFile(
      pipeline,
      JSON.stringify({
        api_url: sb.url,
        domains: sb.domains,
        token_file: join(root, 'token'),
        resources: ['schools', 'achievements'],
        format: 'ndjson',
        workers: 0,
      }),
    );
    const args = ['--dest', dest, '--secret-file', join(root, 'secret'), '--port', '0', '--token-dir', join(root, 'tokens')];
    const runArgs = [...args, '--run', pipeline, '--run-delay', '0', '--json'];

    const first = await serve(runArgs);
    sb.control.setWebhookUrl(first.url);
    const held = sb.control.hold({ school: 'A1001', resource: 'achievements' });
    await sb.control.setAccess('A1001', 'approved');
    await held.reached; // the first child is reading A1001
    const others = [...approved.slice(1), 'A9001', 'A9002'];
    for (const id of others) void sb.control.setAccess(id, 'approved');
    await sb.control.flushWebhooks();
    expect(sb.control.webhooks().map((w) => w.status)).toEqual(Array(8).fill(200));
    expect(runLines(first)).toEqual(['run_started']); // the seven wait for it
    expect((await readWebhookQueue(new LocalSink(dest)))!.waiting.map((w) => w.school_id)).toEqual(others);

    first.child.kill('SIGTERM'); // passed on to the run, which abandons its held request
    expect(await first.exit).toBe(0);
    held.release();
    expect(runLines(first)).toEqual(['run_started', 'run_exit']);
    expect(first.events.find((e) => e.event === 'run_exit')).toMatchObject({ code: 143, retry: 1 });
    const kept = (await readWebhookQueue(new LocalSink(dest)))!;
    expect(kept.running).toEqual([]);
    expect(kept.waiting.map((w) => w.school_id).sort()).toEqual(['A1001', ...others].sort());

    const second = await serve(runArgs);
    sb.control.setWebhookUrl(second.url);
    expect(second.events.find((e) => e.event === 'queue_resumed')).toMatchObject({ waiting: 8 });
    await second.until((e) => e.event === 'school_outcome', 8);
    second.child.kill('SIGTERM');
    expect(await second.exit).toBe(0);
    expect(runLines(second)).toEqual(['run_started', 'run_exit']);
    const exit = second.events.find((e) => e.event === 'run_exit');
    expect(exit).toMatchObject({ level: 'info', code: 0, schools: 8, exported: 8 });
    const outcomes = second.events.filter((e) => e.event === 'school_outcome');
    expect(outcomes.map((e) => [e.school_id, e.outcome]).sort()).toEqual(['A1001', ...others].sort().map((id) => [id, 'exported']));
    // every task of the run the receiver started committed, in full (or found its content
    // unchanged since the first run, which committed it before it was stopped)
    const tasks = readRunManifest(dest, String(exit.run_id)).tasks;
    expect(tasks).toHaveLength(16);
    expect(tasks.every((t) => (t.status === 'committed' || t.status === 'unchanged') && t.mode === 'full')).toBe(true);
    // the runs' own log lines reached the receiver's stderr; no run ended on the lease
    expect(second.events.some((e) => e.event === 'run_start' && e.run_id === exit.run_id)).toBe(true);
    expect([...first.events, ...second.events].filter((e) => e.event === 'run_exit' && e.code === 2)).toEqual([]);
    expect((await readWebhookQueue(new LocalSink(dest)))!).toMatchObject({ waiting: [], running: [] });
  }, 120_000); // four Node processes: 35-40 s measured on the shared 2-core machine at load average ~20
});
