/** Child processes of the benchmark: the sandbox server and one-shot measuring children. */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { resolve } from 'node:path';
import type { SandboxOptions } from '../src/sandbox/index.ts';

export const ROOT = resolve(import.meta.dirname, '..');
const RUN_TS = resolve(ROOT, 'bin/run-ts.js');

export interface SandboxProc {
  url: string;
  domains: Record<string, string>;
  token: string;
  /** the sandbox's own default URL: its /_control API */
  sandbox: string;
  command(cmd: Record<string, unknown>): Promise<Record<string, unknown>>;
  /** An HTTP call to the sandbox's control API. */
  control(method: string, path: string, body?: unknown): Promise<unknown>;
  close(): Promise<void>;
}

export async function startSandboxProc(sandbox: SandboxOptions, front: boolean): Promise<SandboxProc> {
  const child = spawn(process.execPath, [RUN_TS, resolve(ROOT, 'bench/sandbox-server.ts'), JSON.stringify({ sandbox, front })], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! });
  const waiting: { res: (line: string) => void; rej: (e: Error) => void }[] = [];
  const early: string[] = [];
  lines.on('line', (l) => (waiting.length ? waiting.shift()!.res(l) : early.push(l)));
  child.once('exit', (code) => {
    for (const w of waiting.splice(0)) w.rej(new Error(`sandbox server exited (${code})`));
  });
  const nextLine = () =>
    new Promise<string>((res, rej) => {
      if (early.length) return res(early.shift()!);
      if (child.exitCode !== null) return rej(new Error(`sandbox server exited (${child.exitCode})`));
      waiting.push({ res, rej });
    });
  const info = JSON.parse(await nextLine()) as Omit<SandboxProc, 'command' | 'control' | 'close'>;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return {
    ...info,
    async command(cmd) {
      child.stdin!.write(JSON.stringify(cmd) + '\n');
      return JSON.parse(await nextLine()) as Record<string, unknown>;
    },
    async control(method, path, body) {
      const res = await fetch(`${info.sandbox}/_control${path}`, {
        method,
        headers: { authorization: `Bearer ${info.token}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      if (!res.ok) throw new Error(`control ${method} ${path}: HTTP ${res.status} ${await res.text()}`);
      return res.json();
    },
    async close() {
      child.stdin!.end();
      await exited;
    },
  };
}

function newest(dir: string): number {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    t = Math.max(t, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }
  return t;
}

/** Whether dist/ is built and newer than every source: then exports run it, as the installed command would. */
export function distIsFresh(): boolean {
  if (process.env.BENCH_CODE === 'src') return false; // measure the sources through tsx on request
  const main = join(ROOT, 'dist/cli/main.js');
  return existsSync(main) && statSync(main).mtimeMs >= newest(join(ROOT, 'src'));
}

/**
 * Runs bench/<script> with one JSON argument in a fresh node process; returns its last stdout line,
 * parsed. `.mjs` children run with plain Node (the export child then loads dist/ when it is fresh,
 * else the sources through tsx); `.ts` children through tsx.
 */
export async function runChild<T>(
  script: string,
  args: unknown,
  o: { nodeArgs?: string[]; env?: Record<string, string> } = {},
): Promise<T> {
  const plain = script.endsWith('.mjs') && distIsFresh();
  const argv = [...(o.nodeArgs ?? []), ...(plain ? [] : [RUN_TS]), resolve(ROOT, 'bench', script), JSON.stringify(args)];
  const child: ChildProcess = spawn(process.execPath, argv, {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...(plain ? {} : { BENCH_CODE: 'src' }), AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true', ...o.env },
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-8000)));
  const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  const last = out.trim().split('\n').pop() ?? '';
  if (code !== 0 || !last.startsWith('{')) throw new Error(`${script} failed (exit ${code}): ${err || out}`);
  return JSON.parse(last) as T;
}
