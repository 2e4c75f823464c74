import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { assertSafeId } from '../ids.ts';

/**
 * How the receiver starts one run for a batch of approved schools. The real one is a child
 * process, `school-export run PIPELINE --schools A,B,C ...` (a run is a process with its own
 * memory, signals and exit status); tests pass a runner that calls the pipeline in-process.
 */
export interface RunRequest {
  schools: string[];
  /** The part of the destination the run holds (its lease): 0/1 is the whole destination. */
  shard: { index: number; count: number };
  /** Bounded wait for the destination's lease (`--wait-for-lock`): a nightly run may hold it. */
  waitForLockSeconds: number;
}

export interface RunOutcome {
  /** Exit status (0 ok, 1 some task failed, 2 usage/lease, 130/143 interrupted); null when it did not start or was killed. */
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The run's id (from its summary), when it got as far as printing one: its manifest says which schools committed. */
  runId?: string;
  /** Why it ended without a summary, in one line (the run's own error line, or why it could not start). */
  error?: string;
}

export interface ChildRun {
  pid?: number;
  done: Promise<RunOutcome>;
  /** SIGTERM: the run stops at the next page, commits nothing half-written, writes its manifest (`interrupted`). */
  stop(): void;
}

export type ChildRunner = (req: RunRequest) => ChildRun;

// two folders up is the package root from src/webhooks/, dist/webhooks/ and dist/bundle/ (config/package-root.ts)
const BIN = fileURLToPath(new URL('../../bin/school-export.js', import.meta.url));

export interface ProcessRunnerOptions {
  pipeline: string;
  /** The receiver's destination, passed on so the run writes where the receiver reads its manifest. */
  dest?: string;
  s3Endpoint?: string;
  s3Region?: string;
  /** Where the run's stderr (its log lines) goes; default the receiver's stderr. */
  stderr?: NodeJS.WritableStream;
  /** The program (default: this installation's bin/school-export.js under this Node). */
  command?: { cmd: string; args: string[] };
}

/** The arguments of one run; school ids are checked again here, as they become an argument. */
export function runArgs(o: ProcessRunnerOptions, req: RunRequest): string[] {
  return [
    'run',
    o.pipeline,
    '--schools',
    req.schools.map((id) => assertSafeId(id)).join(','),
    '--shard',
    `${req.shard.index}/${req.shard.count}`,
    '--wait-for-lock',
    String(req.waitForLockSeconds),
    '--json',
    ...(o.dest ? ['--dest', o.dest] : []),
    ...(o.s3Endpoint ? ['--s3-endpoint', o.s3Endpoint] : []),
    ...(o.s3Region ? ['--s3-region', o.s3Region] : []),
  ];
}

const MAX_STDOUT = 16 * 1024 * 1024; // the summary of a batch; more is not a summary
const MAX_LINE = 2000;

export function processRunner(o: ProcessRunnerOptions): ChildRunner {
  const base = o.command ?? { cmd: process.execPath, args: [BIN] };
  const errOut = o.stderr ?? process.stderr;
  return (req) => {
    // stdout: the run's summary (JSON, --json); stderr: its log lines, passed on as they come
    const child = spawn(base.cmd, [...base.args, ...runArgs(o, req)], { stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
    let stdout = '';
    let lastError: string | undefined;
    let partial = '';
    child.stdout?.on('data', (c: Buffer) => {
      if (stdout.length < MAX_STDOUT) stdout += c.toString('utf8');
    });
    child.stderr?.on('data', (c: Buffer) => {
      errOut.write(c);
      const lines = (partial + c.toString('utf8')).split('\n');
      partial = (lines.pop() ?? '').slice(-MAX_LINE);
      for (const l of lines) if (l.startsWith('school-export: ')) lastError = l.slice(0, MAX_LINE);
    });
    const done = new Promise<RunOutcome>((resolve) => {
      let ended = false; // 'error' and 'close' may both fire
      const finish = (code: number | null, signal: NodeJS.Signals | null, error?: string) => {
        if (ended) return;
        ended = true;
        if (partial.startsWith('school-export: ')) lastError = partial;
        const runId = summaryRunId(stdout);
        const why = error ?? (runId ? undefined : lastError);
        resolve({ code, signal, ...(runId ? { runId } : {}), ...(why ? { error: why } : {}) });
      };
      child.once('error', (e) => finish(null, null, `the run could not start: ${e.message}`));
      child.once('close', (code, signal) => finish(code, signal));
    });
    return {
      pid: child.pid,
      done,
      stop: () => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      },
    };
  };
}

/** The run id of the summary `run --json` prints as its last stdout line. */
export function summaryRunId(stdout: string): string | undefined {
  const last = stdout.trimEnd().split('\n').at(-1);
  if (!last?.startsWith('{')) return undefined;
  try {
    const id = (JSON.parse(last) as { runId?: unknown }).runId;
    return typeof id === 'string' && /^[0-9A-Za-z][0-9A-Za-z_.-]{0,127}$/.test(id) ? id : undefined;
  } catch {
    return undefined;
  }
}
