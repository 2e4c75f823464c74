import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runExport } from '../../src/pipeline/run.ts';
import type { Reporter, RunEvent } from '../../src/pipeline/progress.ts';
import { RESOURCES } from '../../src/resources/index.ts';
import { renderSummary, type RunSummary } from '../../src/pipeline/summary.ts';
import { startSandbox, type RequestLogEntry, type Sandbox } from '../../src/sandbox/index.ts';
import type { Clock } from '../../src/source/retry.ts';
import { readManifests } from '../helpers/read-exports.ts';
import { runChild } from './child-run.ts';
import { sandboxConfig, tempDir } from './helpers.ts';

/**
 * Issue 9: an inactive school (423 school_inactive) costs one retry budget per run, not one per
 * task, and is said once. The retry waits run on an injected clock: nothing waits for real.
 */
const INACTIVE = 'A1002';
const MAX_RETRIES = 2;
const BUDGET = MAX_RETRIES + 1; // attempts of one request
const CONCURRENCY = 2;

function fakeRetryClock(): Clock & { waited: number[] } {
  let t = 0;
  const waited: number[] = [];
  return {
    waited,
    now: () => t,
    sleep: async (ms) => {
      waited.push(ms);
      t += ms;
    },
  };
}

function recorder(): { events: RunEvent[]; reporter: Reporter } {
  const events: RunEvent[] = [];
  return { events, reporter: { emit: (e) => void events.push(e), close() {} } };
}

describe('an inactive school', () => {
  let sb: Sandbox;
  beforeAll(async () => {
    sb = await startSandbox({ seed: 45, schools: 3, achievementsPerSchool: 40 });
  });
  afterAll(async () => {
    await sb?.close();
  });

  /** Requests that reached the inactive school's paths (its School object, which still answers, aside). */
  const schoolRequests = () =>
    sb.control
      .requests()
      .filter(
        (r) =>
          r.path.includes(`/schools/${INACTIVE}/`) ||
          r.path.includes(`/meta/schools/${INACTIVE}`) ||
          r.path.includes(`/schools/${INACTIVE}?`),
      );

  function expectSaidOnce(s: RunSummary, events: RunEvent[]): void {
    expect(s.status).toBe('partial');
    const mine = s.failures.filter((f) => f.school_id === INACTIVE);
    expect(mine).toEqual([expect.objectContaining({ status: 'skipped', code: 'E_SCHOOL_INACTIVE' })]);
    expect(mine[0]!.message).toMatch(/inactive \(423 school_inactive after the retry budget\)/);
    expect(s.failures.filter((f) => f.school_id !== INACTIVE)).toEqual([]);
    expect(
      renderSummary(s)
        .split('\n')
        .filter((l) => l.includes(INACTIVE)),
    ).toHaveLength(1);
    const skipped = events.filter((e) => e.event === 'school_skipped' && e.school_id === INACTIVE);
    expect(skipped).toEqual([expect.objectContaining({ code: 'E_SCHOOL_INACTIVE' })]);
  }

  describe('a full run (the probe finds it)', () => {
    let tmp: { dir: string; cleanup(): void };
    const clock = fakeRetryClock();
    const { events, reporter } = recorder();
    let s: RunSummary;
    let sent: RequestLogEntry[];
    beforeAll(async () => {
      tmp = tempDir('inactive-full-');
      sb.control.setInactive(INACTIVE, true);
      sb.control.clearRequests();
      s = await runExport(sandboxConfig(sb, tmp.dir, { format: 'ndjson', max_retries: MAX_RETRIES, concurrency: CONCURRENCY }), {
        token: sb.tokens.full,
        retryClock: clock,
        reporter,
      });
      sent = schoolRequests();
      sb.control.setInactive(INACTIVE, false);
    });
    afterAll(() => tmp?.cleanup());

    it('spends one retry budget on the school, on the injected clock, and exports the other schools in full', () => {
      expect(sent.length).toBeGreaterThan(0);
      expect(sent.length).toBeLessThanOrEqual(BUDGET);
      expect(sent.every((r) => r.status === 423)).toBe(true);
      expect(clock.waited).toHaveLength(MAX_RETRIES);
      expect(s.tasks).toMatchObject({ committed: 2 * RESOURCES.length, failed: 0, interrupted: 0, not_started: 0 });
      expect(readManifests(tmp.dir).some((t) => t.school_id === INACTIVE && t.status === 'committed')).toBe(false);
    });

    it('says so once: one E_SCHOOL_INACTIVE entry, one summary line, one log line; the run is partial', () => {
      expectSaidOnce(s, events);
    });
  });

  describe('an incremental run (no probe: its tasks meet the 423 themselves)', () => {
    let tmp: { dir: string; cleanup(): void };
    const { events, reporter } = recorder();
    let s: RunSummary;
    let sent: RequestLogEntry[];
    let all: RequestLogEntry[];
    beforeAll(async () => {
      tmp = tempDir('inactive-incr-');
      // Everything but school_permissions: incremental reads of these need no probe.
      const resources = [
        'schools',
        'school_meta',
        'school_acl',
        'achievements',
        'achievement_attributes',
        'assessment_aspects',
        'assessment_results',
        'assessment_resultsets',
        'deletions',
      ];
      const cfg = sandboxConfig(sb, tmp.dir, { format: 'ndjson', resources, max_retries: MAX_RETRIES, concurrency: CONCURRENCY });
      const first = await runExport(cfg, { token: sb.tokens.full, retryClock: fakeRetryClock() });
      expect(first.status).toBe('ok');
      sb.control.setInactive(INACTIVE, true);
      sb.control.clearRequests();
      s = await runExport(cfg, { token: sb.tokens.full, retryClock: fakeRetryClock(), reporter });
      sent = schoolRequests();
      all = sb.control.requests();
      sb.control.setInactive(INACTIVE, false);
    });
    afterAll(() => tmp?.cleanup());

    it('at most `concurrency` tasks spend the retry budget; the rest are skipped without a request', () => {
      expect(all.some((r) => r.path.includes('/permissions'))).toBe(false); // no probe ran
      expect(sent.length).toBeGreaterThan(0);
      expect(sent.length).toBeLessThanOrEqual(CONCURRENCY * BUDGET);
      expect(sent.every((r) => r.status === 423)).toBe(true);
      const started = events.filter((e) => e.event === 'task_start' && e.school_id === INACTIVE && e.resource !== 'schools');
      expect(started.length).toBeLessThanOrEqual(CONCURRENCY);
    });

    it('says so once, as a full run does: one E_SCHOOL_INACTIVE entry, one summary line, one log line; the run is partial', () => {
      expectSaidOnce(s, events);
    });
  });

  it('the command exits 1 when a school is inactive (its summary: partial)', async () => {
    const tmp = tempDir('inactive-cli-');
    try {
      sb.control.setInactive(INACTIVE, true);
      // no retries: the one answer is the budget, so nothing waits
      const r = await runChild(sb, ['--dest', tmp.dir, '--format', 'ndjson', '--resources', 'school_meta', '--max-retries', '0']).done;
      expect(r.code, r.stderr).toBe(1);
      expect(JSON.parse(r.stdout)).toMatchObject({ status: 'partial', failures: [expect.objectContaining({ school_id: INACTIVE })] });
    } finally {
      sb.control.setInactive(INACTIVE, false);
      tmp.cleanup();
    }
  });
});
