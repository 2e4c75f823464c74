import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runExport } from '../../src/pipeline/run.ts';
import type { Reporter, RunEvent } from '../../src/pipeline/progress.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { currentState, readManifests } from '../helpers/read-exports.ts';
import { allSchemas, canonical, expectedState, sandboxConfig, tempDir } from './helpers.ts';

/**
 * One big school read in full: split into updated_at windows, committed at checkpoints, and
 * resumed from its saved cursor after an interruption, each time exactly equal to the sandbox.
 */
const SCHOOL = 'A1001';
const ROWS = 3000;
const PER_PAGE = 100; // 30 pages

function eventsInto(events: RunEvent[], on?: (e: RunEvent) => void): Reporter {
  return {
    emit(e) {
      events.push(e);
      on?.(e);
    },
    close() {},
  };
}

describe('one big school', () => {
  let sb: Sandbox;
  const regionOf = () => 'uk';
  const base = { resources: ['achievements'], schools: [SCHOOL], per_page: PER_PAGE, format: 'ndjson' as const };

  beforeAll(async () => {
    sb = await startSandbox({ seed: 7, schools: 2, achievementsPerSchool: 10, bigSchools: { [SCHOOL]: ROWS } });
  });
  afterAll(async () => {
    await sb.close();
  });

  async function expectExact(dir: string): Promise<void> {
    const schemas = allSchemas();
    const got = await currentState(dir, schemas);
    const want = await expectedState(sb, [SCHOOL], regionOf);
    for (const table of ['achievements', 'achievement_students', 'achievement_employees']) {
      expect(canonical(got.get(table) ?? []), table).toEqual(canonical(want.get(table) ?? []));
    }
  }

  const pageRequests = () => sb.control.requests().filter((r) => r.path.includes(`/schools/${SCHOOL}/achievements`)).length;

  it('windows: a full read in updated_at windows holds every row once and splits the rows, not the clock', async () => {
    const tmp = tempDir('windows-');
    try {
      sb.control.clearRequests();
      const s = await runExport(sandboxConfig(sb, tmp.dir, { ...base, windows: 4 }), { token: sb.tokens.full });
      expect(s.failures).toEqual([]);
      expect(s.tables.achievements?.rows).toBe(ROWS);
      // the sampling page, each window's pages (a partial last page each) and the probes that
      // find where the rows stop (at most three rounds of four one-row requests)
      const requests = sb.control.requests().filter((r) => r.path.includes(`/schools/${SCHOOL}/achievements`));
      const probes = requests.filter((r) => new URL(r.path, 'http://x').searchParams.get('per_page') === '1');
      expect(probes.length).toBeLessThanOrEqual(3 * 4);
      expect(requests.length - probes.length).toBeLessThanOrEqual(ROWS / PER_PAGE + 1 + 4);
      // The sandbox's rows stop years before its clock: the windows still split them, not just
      // the time up to the clock (which would leave every row in the first window).
      const pagesPerWindow = new Map<string, number>();
      for (const r of requests.filter((x) => !probes.includes(x))) {
        const q = new URL(r.path, 'http://x').searchParams;
        const w = `${q.get('updated_after') ?? ''}..${q.get('updated_before') ?? ''}`;
        if (w !== '..') pagesPerWindow.set(w, (pagesPerWindow.get(w) ?? 0) + 1);
      }
      expect(pagesPerWindow.size).toBe(4);
      expect(Math.max(...pagesPerWindow.values())).toBeLessThanOrEqual(Math.ceil(ROWS / PER_PAGE / 2));
      await expectExact(tmp.dir);
    } finally {
      tmp.cleanup();
    }
  });

  it('checkpoints: a long read commits pieces every N pages; only the last one completes the snapshot', async () => {
    const tmp = tempDir('checkpoints-');
    try {
      const s = await runExport(sandboxConfig(sb, tmp.dir, { ...base, checkpoint_pages: 8 }), { token: sb.tokens.full });
      expect(s.failures).toEqual([]);
      expect(s.tasks.committed).toBe(1);
      const pieces = readManifests(tmp.dir).filter((t) => t.resource === 'achievements');
      expect(pieces.map((t) => [t.checkpoint?.seq, t.checkpoint?.final])).toEqual([
        [1, false],
        [2, false],
        [3, false],
        [4, true],
      ]);
      expect(pieces.reduce((n, t) => n + (t.rows.achievements ?? 0), 0)).toBe(ROWS);
      await expectExact(tmp.dir);
    } finally {
      tmp.cleanup();
    }
  });

  it('an interrupted read resumes from its saved cursor in the next run, then catches up on what changed meanwhile', async () => {
    const tmp = tempDir('resume-');
    try {
      // Stop the first run right after its second checkpoint (page 16 of 30): a known page, no timing.
      const ac = new AbortController();
      const events: RunEvent[] = [];
      const reporter = eventsInto(events, (e) => e.event === 'checkpoint' && e.seq === 2 && ac.abort());
      const first = await runExport(sandboxConfig(sb, tmp.dir, { ...base, checkpoint_pages: 8 }), {
        token: sb.tokens.full,
        signal: ac.signal,
        reporter,
      });
      expect(first.status).toBe('interrupted');
      expect(first.failures.map((f) => f.status)).toEqual(['interrupted']);
      const state = JSON.parse(readFileSync(join(tmp.dir, `_state/region=uk/school_id=${SCHOOL}.json`), 'utf8'));
      const cp = state.resources.achievements.checkpoint;
      expect(cp).toMatchObject({ seq: 2, pages: 16, rows: 1600 });
      expect(state.resources.achievements.watermark).toBeNull();

      // Rows change between the interruption and the resume: behind and ahead of the saved cursor.
      const ids = sb.control.records(SCHOOL, 'achievements').map((r) => (r as { id: string }).id);
      sb.control.update(SCHOOL, 'achievements', ids[10]!, { comment: 'changed behind the cursor' });
      sb.control.update(SCHOOL, 'achievements', ids[ROWS - 10]!, { comment: 'changed ahead of the cursor' });

      sb.control.clearRequests();
      const resumed: RunEvent[] = [];
      const second = await runExport(sandboxConfig(sb, tmp.dir, { ...base, checkpoint_pages: 8 }), {
        token: sb.tokens.full,
        reporter: eventsInto(resumed),
      });
      expect(second.failures).toEqual([]);
      expect(second.tasks.resumed).toBe(1);
      expect(resumed.some((e) => e.event === 'resumed')).toBe(true);
      // the 14 pages left (and the page in flight when the first run stopped), plus one catch-up page
      expect(pageRequests()).toBeLessThanOrEqual(30 - 16 + 1 + 8);
      const after = JSON.parse(readFileSync(join(tmp.dir, `_state/region=uk/school_id=${SCHOOL}.json`), 'utf8'));
      expect(after.resources.achievements.checkpoint).toBeUndefined();
      expect(Date.parse(after.resources.achievements.watermark)).toBeGreaterThanOrEqual(Date.parse(cp.started_at));
      await expectExact(tmp.dir);
    } finally {
      tmp.cleanup();
    }
  });
});
