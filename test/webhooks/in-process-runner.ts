import { setMaxListeners } from 'node:events';
import { oneLine } from '../../src/errors.ts';
import type { PipelineConfig } from '../../src/config/schema.ts';
import { exitCodeFor } from '../../src/cli/commands.ts';
import { runExport } from '../../src/pipeline/run.ts';
import type { Sandbox } from '../../src/sandbox/index.ts';
import type { ChildRunner, RunOutcome, RunRequest } from '../../src/webhooks/child-run.ts';
import { sandboxConfig } from '../integration/helpers.ts';

export interface RecordedRun {
  req: RunRequest;
  outcome?: RunOutcome;
}

/**
 * The receiver's runs, as `school-export run PIPELINE --schools ... --shard ... --wait-for-lock ...`
 * would do them, but in this process (runExport against the sandbox, no worker threads): the
 * pipeline is the real one, only the Node start-up is saved. Records every run and how many
 * were going at once; stop() is the SIGTERM a child would get.
 */
export function inProcessRunner(sb: Sandbox, dest: string, extra: PipelineConfig = {}) {
  const runs: RecordedRun[] = [];
  let active = 0;
  let maxActive = 0;
  const noWait = { now: () => Date.now(), sleep: () => Promise.resolve() };
  const runner: ChildRunner = (req) => {
    const ac = new AbortController();
    setMaxListeners(0, ac.signal); // one signal for every request of the run, as the command's SIGTERM handler has
    const rec: RecordedRun = { req };
    runs.push(rec);
    active += 1;
    maxActive = Math.max(maxActive, active);
    const done = (async (): Promise<RunOutcome> => {
      try {
        const cfg = sandboxConfig(sb, dest, {
          workers: 0,
          ...extra,
          schools: req.schools,
          shard: `${req.shard.index}/${req.shard.count}`,
          wait_for_lock: req.waitForLockSeconds,
        });
        const s = await runExport(cfg, { token: sb.tokens.full, signal: ac.signal, retryClock: noWait });
        return { code: s.status === 'ok' ? 0 : s.status === 'interrupted' ? 143 : 1, signal: null, runId: s.runId };
      } catch (e) {
        return { code: ac.signal.aborted ? 143 : exitCodeFor(e), signal: null, error: `school-export: ${oneLine(e)}` };
      } finally {
        active -= 1;
      }
    })().then((o) => (rec.outcome = o));
    return { done, stop: () => ac.abort(new Error('interrupted by SIGTERM')) };
  };
  return { runner, runs, maxActive: () => maxActive, active: () => active };
}
