/**
 * Section 10: the fixed cost of a run (issue 21 item 6): the installed command, as a cron job
 * starts it (`node bin/school-export.js run ...`, a whole process: module loading, settings
 * checks, the lease, the sweep of leftovers, the first connections, the commit), exporting 6
 * schools x 10 achievements from a live sandbox to a fresh directory. Wall time from spawn to
 * exit; CPU time of the child from /proc (Linux; absent elsewhere). Medians of `repeat` runs.
 *
 * "Installed" is the package's own files (package.json's `files`: bin/, dist/, schema/...) in a
 * directory of their own, with this checkout's node_modules linked in: what a packed tarball
 * installs. Run from the checkout instead, bin/school-export.js first walks src/ to check dist/
 * is not stale (about 250 files: 5-35 ms), a development convenience an installed package skips
 * (it has no src/); that figure is shown beside it.
 */
import { spawn } from 'node:child_process';
import { cpSync, readFileSync, symlinkSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
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
  /** The same command run from the checkout (its staleness check of src/ included): median wall and CPU, every run's wall, ms. */
  checkout: { ms: number; cpuMs?: number; runs: number[] };
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
  const installed = await installedCopy(o.work);
  const runs: StartupRun[] = [];
  const fromCheckout: StartupRun[] = [];
  const nodeMs: number[] = [];
  const once = async (root: string) => {
    const dest = await freshDir(o.work, 'startup');
    const argv = [resolve(root, 'bin/school-export.js'), 'run', '--api-url', sb.url, '--dest', dest, '--resources', 'achievements'];
    for (const [d, u] of Object.entries(sb.domains)) argv.push('--domain', `${d}=${u}`);
    argv.push('--format', 'ndjson', '--progress', 'none');
    const cpu0 = childrenCpuMs();
    const { ms, code } = await timed(argv, { ...process.env, SCHOOL_API_TOKEN: sb.token });
    const cpu1 = childrenCpuMs();
    await rm(dest, { recursive: true, force: true });
    if (code !== 0) throw new Error(`start-up: the run exited ${code}`);
    return { ms, ...(cpu0 !== undefined && cpu1 !== undefined ? { cpuMs: cpu1 - cpu0 } : {}) };
  };
  try {
    for (let i = 0; i < repeat + 1; i++) {
      // interleaved: the installed copy, Node alone, the checkout
      const run = await once(installed);
      const bare = await timed(['-e', '0'], process.env);
      const checkout = await once(ROOT);
      o.log(
        `start-up (${o.shape}): run ${i + 1} of ${repeat + 1}${i === 0 ? ' (warm-up: disk caches, compile cache)' : ''}: ${run.ms.toFixed(0)} ms installed, ${checkout.ms.toFixed(0)} ms from the checkout`,
      );
      if (i === 0) continue;
      runs.push(run);
      nodeMs.push(bare.ms);
      fromCheckout.push(checkout);
    }
  } finally {
    await sb.close();
    await rm(installed, { recursive: true, force: true });
  }
  const m = median(runs);
  const c = median(fromCheckout);
  return {
    schools,
    rows,
    median: m.median,
    ms: m.ms,
    checkout: { ...c.median, runs: c.ms },
    nodeMs: median(nodeMs.map((ms) => ({ ms }))).median.ms,
  };
}

/** The package's files as a tarball installs them (package.json `files`, no source maps), node_modules linked from the checkout. */
async function installedCopy(work: string): Promise<string> {
  const dir = await freshDir(work, 'installed');
  const files = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { files: string[] }).files;
  // timestamps kept: bin/school-export.js runs the bundle only when it is not older than dist/cli/main.js
  for (const f of ['package.json', ...files.filter((f) => !f.startsWith('!') && f !== 'npm-shrinkwrap.json')]) {
    cpSync(join(ROOT, f), join(dir, f), { recursive: true, preserveTimestamps: true, filter: (src) => !src.endsWith('.map') });
  }
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  return dir;
}

/** Wall time of one `node ARGV` process, from spawn to exit. */
async function timed(argv: string[], env: NodeJS.ProcessEnv): Promise<{ ms: number; code: number | null }> {
  const t0 = performance.now();
  const code = await new Promise<number | null>((res) => {
    spawn(process.execPath, argv, { cwd: ROOT, stdio: 'ignore', env }).once('exit', (c) => res(c));
  });
  return { ms: performance.now() - t0, code };
}
