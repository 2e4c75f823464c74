import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { startGateProxy } from './gate-proxy.ts';

const BIN = resolve(import.meta.dirname, '../../bin/school-export.js');

/**
 * Runs `school-export run ARGS` as its own process against the sandbox, through a proxy that
 * holds the first request matching `at`, and kills the process (SIGKILL) once that request
 * arrives: a run killed at a known page, as a crash or an OOM kill would stop it. Resolves with
 * the held request's path; rejects when the process exits before reaching it.
 */
export async function runKilledAt(sb: Sandbox, args: string[], at: (pathAndQuery: string) => boolean): Promise<string> {
  const gate = await startGateProxy([sb.url, ...Object.values(sb.domains)], at);
  try {
    const domains = Object.entries(sb.domains).flatMap(([d, u]) => ['--domain', `${d}=${gate.map[u]}`]);
    const child = spawn(process.execPath, [BIN, 'run', '--api-url', gate.map[sb.url]!, ...domains, '--progress', 'none', ...args], {
      env: { ...process.env, SCHOOL_API_TOKEN: sb.tokens.full },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<NodeJS.Signals | null>((res) => child.on('close', (_code, signal) => res(signal)));
    const reached = await Promise.race([gate.reached, exited.then(() => undefined)]);
    if (reached === undefined) throw new Error(`the run ended before the page it was to be killed at: ${stderr.trim().slice(-500)}`);
    child.kill('SIGKILL');
    if ((await exited) !== 'SIGKILL') throw new Error('the run was not killed by SIGKILL');
    return reached;
  } finally {
    await gate.close();
  }
}
