import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Sandbox } from '../../src/sandbox/index.ts';

/** `school-export run` in its own process, as cron or Kubernetes starts it (bin/ runs dist/). */
export const BIN = resolve(import.meta.dirname, '../../bin/school-export.js');

export interface Ended {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface ChildRun {
  child: ChildProcess;
  done: Promise<Ended>;
  /** Resolves with the first stderr line matching re (a JSON log line with --progress json); rejects if the process ends first. */
  line(re: RegExp): Promise<string>;
}

/**
 * Runs `school-export run` against the sandbox (its API URL and region domains), JSON progress
 * on stderr, the summary as JSON on stdout. `env` adds to (or, with undefined, removes from) the
 * child's environment; the token is the sandbox's full token unless env says otherwise.
 */
export function runChild(sb: Sandbox, args: string[], env: Record<string, string | undefined> = {}): ChildRun {
  const domains = Object.entries(sb.domains).flatMap(([d, u]) => ['--domain', `${d}=${u}`]);
  const merged: Record<string, string | undefined> = { ...process.env, SCHOOL_API_TOKEN: sb.tokens.full, ...env };
  const childEnv = Object.fromEntries(Object.entries(merged).filter(([, v]) => v !== undefined));
  const child = spawn(process.execPath, [BIN, 'run', '--api-url', sb.url, ...domains, '--progress', 'json', ...args], {
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  const waiters: { re: RegExp; resolve: (l: string) => void; reject: (e: Error) => void }[] = [];
  const scan = () => {
    const lines = stderr.split('\n');
    for (const w of [...waiters]) {
      const hit = lines.find((l) => w.re.test(l));
      if (hit !== undefined) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(hit);
      }
    }
  };
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => {
    stderr += d.toString();
    scan();
  });
  let ended = false;
  const unmatched = (re: RegExp) => new Error(`the run ended before a stderr line matched ${re}:\n${stderr}`);
  const done = new Promise<Ended>((res) =>
    child.on('close', (code, signal) => {
      ended = true;
      for (const w of waiters.splice(0)) w.reject(unmatched(w.re));
      res({ code, signal, stdout, stderr });
    }),
  );
  return {
    child,
    done,
    line: (re) =>
      new Promise<string>((resolve, reject) => {
        waiters.push({ re, resolve, reject });
        scan();
        const w = waiters.find((x) => x.re === re && x.resolve === resolve);
        if (w && ended) {
          waiters.splice(waiters.indexOf(w), 1);
          reject(unmatched(re));
        }
      }),
  };
}

/** The JSON log lines of a run's stderr (other lines, such as the one-line error, are left out). */
export function logEvents(stderr: string): Record<string, unknown>[] {
  return stderr
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** Every file under dir, relative, temp names included. */
export function walk(dir: string, base = ''): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(join(dir, e.name), `${base}${e.name}/`) : [`${base}${e.name}`],
  );
}

/** Temporary files (`.<name>~<owner>~<hex>.tmp` or the older `.<name>.<hex>.tmp`) under dir. */
export function tempFiles(dir: string): string[] {
  return walk(dir).filter((f) => /(^|\/)\.[^/]+\.tmp$/.test(f));
}
