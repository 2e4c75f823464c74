/**
 * Section 10: the fixed cost of a run (issue 21 item 6): the installed command, as a cron job
 * starts it (`node bin/school-export.js run ...`, a whole process: module loading, settings
 * checks, the lease, the sweep of leftovers, the first connections, the commit), exporting 6
 * schools x 10 achievements from a live sandbox to a fresh directory. Wall time from spawn to
 * exit; CPU time of the child from /proc (Linux; absent elsewhere). Medians of `repeat` runs.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { resolve } from 'node:path';
import { startSandboxProc, ROOT } from './procs.ts';
import { freshDir, median, type Opts } from './sections.ts';

export interface StartupRun {
  ms: number;
  cpuMs?: number;
}

export interface StartupResult {
  schools: number;
  rows: number;
  median: StartupRun;
  /** every run's wall time, ms */
  ms: number[];
  /**
   * Node's own start and exit, `node -e 0` in the same environment, timed between the runs (median, ms):
   * the floor no code of ours can go below. On the bench machine it includes reading the CA
   * bundle NODE_EXTRA_CA_CERTS names (Node 20 loads it at start: 30 -> 100 ms).
   */
  nodeMs: number;
}

/** CPU time (ms) of the children this process has waited for, from /proc/self/stat (cutime + cstime). */
function childrenCpuMs(): number | undefined {
  try {
    const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ');
    // after "pid (comm) ": state is field 3, so cutime (16) and cstime (17) are at 13 and 14 here
    return ((Number(fields[13]) + Number(fields[14])) * 1000) / 100; // USER_HZ is 100 on Linux
  } catch {
    return undefined;
  }
}

export async function startup(o: Opts): Promise<StartupResult> {
  const { schools, rows, repeat } = o.scale.startup;
  const sb = await startSandboxProc({ seed: 1, schools, achievementsPerSchool: rows, maxPerPage: 1000, dataShape: o.shape }, false);
  const runs: StartupRun[] = [];
  const nodeMs: number[] = [];
  try {
    for (let i = 0; i < repeat + 1; i++) {
      const dest = await freshDir(o.work, 'startup');
      const argv = [resolve(ROOT, 'bin/school-export.js'), 'run', '--api-url', sb.url, '--dest', dest, '--resources', 'achievements'];
      for (const [d, u] of Object.entries(sb.domains)) argv.push('--domain', `${d}=${u}`);
      argv.push('--format', 'ndjson', '--progress', 'none');
      const cpu0 = childrenCpuMs();
      const { ms, code } = await timed(argv, { ...process.env, SCHOOL_API_TOKEN: sb.token });
      const cpu1 = childrenCpuMs();
      await rm(dest, { recursive: true, force: true });
      if (code !== 0) throw new Error(`start-up: the run exited ${code}`);
      const bare = await timed(['-e', '0'], process.env);
      if (i > 0) nodeMs.push(bare.ms);
      o.log(
        `start-up (${o.shape}): run ${i + 1} of ${repeat + 1}${i === 0 ? ' (warm-up: disk caches, compile cache)' : ''}: ${ms.toFixed(0)} ms`,
      );
      if (i > 0) runs.push({ ms, ...(cpu0 !== undefined && cpu1 !== undefined ? { cpuMs: cpu1 - cpu0 } : {}) });
    }
  } finally {
    await sb.close();
  }
  const m = median(runs);
  return { schools, rows, median: m.median, ms: m.ms, nodeMs: median(nodeMs.map((ms) => ({ ms }))).median.ms };
}

/** Wall time of one `node ARGV` process, from spawn to exit. */
async function timed(argv: string[], env: NodeJS.ProcessEnv): Promise<{ ms: number; code: number | null }> {
  const t0 = performance.now();
  const code = await new Promise<number | null>((res) => {
    spawn(process.execPath, argv, { cwd: ROOT, stdio: 'ignore', env }).once('exit', (c) => res(c));
  });
  return { ms: performance.now() - t0, code };
}
