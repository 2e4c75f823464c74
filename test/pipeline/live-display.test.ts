import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { etaSeconds, loadEstimates } from '../../src/pipeline/estimates.ts';
import { cut, fitName, renderLive, runLine, type LiveView } from '../../src/pipeline/live-view.ts';
import { createReporter, type RunEvent } from '../../src/pipeline/progress.ts';
import { openSink } from '../../src/sink/index.ts';
import type { Manifest, ManifestTask } from '../../src/manifest/types.ts';
import { FakeTerminal } from '../helpers/fake-terminal.ts';

afterEach(() => {
  vi.useRealTimers();
});

const LONG_SCHOOL = 'A19304995441234';
const LONG_TABLE = 'assessment_resultsets_with_a_custom_include';

function view(o: Partial<LiveView> = {}): LiveView {
  return {
    done: 31,
    total: 60,
    unfinished: 2,
    recordsRead: 1_222_110,
    rowsWritten: 3_450_905,
    elapsedSeconds: 75,
    etaSeconds: 125,
    active: [
      { school: 'A1001', table: 'achievements', mode: 'full', records: 1_234_567, pages: 1235, expected: 2_000_000 },
      { school: LONG_SCHOOL, table: LONG_TABLE, mode: 'incremental', records: 12, pages: 1 },
      { school: 'A1002', table: 'school_meta', mode: 'full', records: 0, pages: 0, expected: 1 },
    ],
    ...o,
  };
}

describe('renderLive (pure)', () => {
  it('at 80 columns: every line fits with a column spare; names are shortened, numbers never', () => {
    const lines = renderLive(view(), { columns: 80, rows: 24 });
    for (const l of lines) expect(l.length, l).toBeLessThanOrEqual(79);
    expect(lines[0]).toMatch(/^31\/60 tasks, /);
    expect(lines[0]).toContain('1,222,110');
    expect(lines[0]).toContain('3,450,905');
    expect(lines[0]).toMatch(/ETA 2 min 5 s|ETA 2m05s/);
    expect(lines[1]).toMatch(/^ {2}A1001 achievements\s+full\s+1,234,567 rec\s+1,235 pg\s+61%$/);
    // the long names lose characters, the counts none
    expect(lines[2]).toContain('…');
    expect(lines[2]).toMatch(/incr\s+12 rec\s+1 pg$/);
    expect(lines[2]).not.toContain(LONG_TABLE);
    // a task never shows 100% before it is done
    expect(
      renderLive(view({ active: [{ school: 'A1', table: 't', mode: 'full', records: 5, pages: 1, expected: 2 }] }), {
        columns: 80,
        rows: 24,
      })[1],
    ).toMatch(/ 99%$/);
  });

  it('at 40 columns: the run line alone, with tasks done/total and the counts it has room for', () => {
    const lines = renderLive(view(), { columns: 40, rows: 24 });
    expect(lines).toHaveLength(1);
    expect(lines[0]!.length).toBeLessThanOrEqual(39);
    expect(lines[0]).toMatch(/^31\/60 tasks/);
    expect(lines[0]).toContain('ETA');
  });

  it('the run line fits any width from 12 to 200 columns, and keeps its numbers whole while it can', () => {
    for (let w = 12; w <= 200; w++) {
      const line = runLine(view(), w);
      expect(line.length, `width ${w}: ${line}`).toBeLessThanOrEqual(w);
      if (w >= 20) expect(line, `width ${w}`).not.toContain('…');
    }
    expect(runLine(view(), 200)).toBe(
      '31/60 tasks, 2 not finished, 1,222,110 records read, 3,450,905 rows written, 16,295 records/s, 1 min 15 s, ETA 2 min 5 s',
    );
  });

  it('lists at most what the screen has room for, then says how many more', () => {
    const active = Array.from({ length: 30 }, (_, i) => ({
      school: `A${1001 + i}`,
      table: 'achievements',
      mode: 'full' as const,
      records: i,
      pages: 1,
    }));
    const tall = renderLive(view({ active }), { columns: 100, rows: 50 });
    expect(tall).toHaveLength(13);
    expect(tall.at(-1)).toBe('  … and 19 more active');
    const short = renderLive(view({ active }), { columns: 100, rows: 8 });
    expect(short).toHaveLength(6); // rows - 2: the block never reaches the screen's top, so it can always be redrawn
    expect(short.at(-1)).toBe('  … and 26 more active');
  });

  it('fitName and cut', () => {
    expect(fitName('A1001', 'achievements', 40)).toBe('A1001 achievements');
    expect(fitName(LONG_SCHOOL, LONG_TABLE, 20)).toHaveLength(20);
    expect(fitName(LONG_SCHOOL, LONG_TABLE, 20)).toBe('A19304995… assessme…');
    expect(cut('abcdef', 4)).toBe('abc…');
    expect(cut('abc', 4)).toBe('abc');
  });
});

describe('etaSeconds', () => {
  it('from the remaining tasks previous sizes at this run’s records/s, no less than the remaining tasks at its tasks/s', () => {
    // 10,000 records in 10 s; 5 tasks done; 2 remaining: 20,000 left to read
    const eta = etaSeconds({
      elapsedSeconds: 10,
      recordsRead: 10_000,
      done: 5,
      remainingTasks: 2,
      remaining: [
        { read: 5_000, expected: 15_000 },
        { read: 0, expected: 10_000 },
      ],
    });
    expect(eta).toBe(20);
    // many small tasks: the task rate decides
    expect(etaSeconds({ elapsedSeconds: 10, recordsRead: 10, done: 10, remainingTasks: 100, remaining: [] })).toBe(100);
    // a task without an estimate counts as the average of those with one
    expect(
      etaSeconds({
        elapsedSeconds: 10,
        recordsRead: 1000,
        done: 0,
        remainingTasks: 2,
        remaining: [{ read: 0, expected: 500 }, { read: 0 }],
      }),
    ).toBe(10);
    expect(etaSeconds({ elapsedSeconds: 0, recordsRead: 0, done: 0, remainingTasks: 2, remaining: [] })).toBeUndefined();
    expect(etaSeconds({ elapsedSeconds: 5, recordsRead: 0, done: 0, remainingTasks: 0, remaining: [] })).toBe(0);
  });
});

const ids = (school: string, resource = 'achievements') => ({ school_id: school, resource });

/** A run of 60 tasks on a terminal: long names, interleaved lines that stay, many redraws. */
function playRun(term: FakeTerminal, advance: (ms: number) => void, clock: { now: number }): ReturnType<typeof createReporter> {
  const r = createReporter('auto', { stream: term as unknown as NodeJS.WriteStream, now: () => clock.now });
  r.emit({ event: 'run_start', run_id: 'r1', dest: 'file:///exports', format: 'parquet', schools: 6, tasks: 60 });
  for (let i = 0; i < 15; i++) r.emit({ event: 'task_start', ...ids(`${LONG_SCHOOL}${i}`, LONG_TABLE), mode: 'full' });
  for (let step = 1; step <= 40; step++) {
    clock.now += 250;
    for (let i = 0; i < 15; i++) {
      r.emit({ event: 'task_progress', ...ids(`${LONG_SCHOOL}${i}`, LONG_TABLE), rows: step * 1000 * (i + 1), pages: step, bytes: 1 });
    }
    if (step === 10) r.emit({ event: 'resumed', ...ids('A1001'), seq: 3, pages: 150, rows: 150_000 });
    if (step === 20)
      r.emit({
        event: 'school_skipped',
        school_id: 'A1009',
        reason: 'school A1009 is inactive (423 school_inactive after the retry budget): its tasks were skipped; the next run tries again',
      });
    if (step % 4 === 0) {
      const i = step / 4 - 1;
      r.emit({ event: 'task_committed', ...ids(`${LONG_SCHOOL}${i}`, LONG_TABLE), rows_written: 2000, files: 1 });
      r.emit({ event: 'task_done', ...ids(`${LONG_SCHOOL}${i}`, LONG_TABLE), rows: step * 1000 * (i + 1), files: 1, ms: 1 });
    }
    advance(250);
  }
  return r;
}

describe('the live display on a terminal (fake TTY)', () => {
  for (const columns of [80, 40]) {
    it(`at ${columns} columns: redrawn in place, never wrapped, no stale copies in the scrollback`, () => {
      vi.useFakeTimers();
      const term = new FakeTerminal(columns, 24);
      const clock = { now: 0 };
      const r = playRun(term, (ms) => vi.advanceTimersByTime(ms), clock);
      expect(term.wraps).toBe(0);
      const all = term.all();
      const heads = all.filter((l) => /^\d+\/60 tasks/.test(l));
      expect(heads, all.join('\n')).toHaveLength(1); // the block, drawn ~80 times, is on the screen once
      expect(all.filter((l) => l.startsWith('run r1: 6 schools, 60 tasks')).length).toBe(1);
      expect(all.filter((l) => l.startsWith('resuming A1001 achievements from page')).length).toBe(1);
      expect(all.filter((l) => l.startsWith('skipped A1009')).length).toBe(1);
      for (const l of all) expect(l.length, l).toBeLessThan(columns);
      const screen = term.screen();
      const head = screen.find((l) => /^\d+\/60 tasks/.test(l))!;
      expect(head).toMatch(/^10\/60 tasks/);
      if (columns === 80) {
        // the 5 tasks still active, each on its line, names shortened and counts whole
        const tasks = screen.slice(screen.indexOf(head) + 1);
        expect(tasks).toHaveLength(5);
        for (const t of tasks) expect(t).toMatch(/^ {2}A\d+ assess\S*… full\s+\d{1,3}(,\d{3})* rec\s+40 pg$/);
        expect(tasks[4]).toContain('600,000 rec');
      } else expect(screen.at(-1)).toBe(head); // one line
      // records read and rows written, both counted; written as committed
      r.close();
      expect(term.all().some((l) => /^\d+\/60 tasks/.test(l))).toBe(false); // close clears the block for the summary
    });
  }

  it('shows a percentage per task and an ETA from the previous run of the same tasks (read from the destination’s manifests)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'se-live-'));
    try {
      const task = (
        school: string,
        resource: string,
        rows: number,
        mode: 'full' | 'incremental',
        o: Partial<ManifestTask> = {},
      ): ManifestTask => ({
        school_id: school,
        region: 'uk',
        resource,
        status: 'committed',
        mode,
        files: [],
        rows: { [resource]: rows, achievement_students: 5 * rows },
        ...o,
      });
      const manifest = (runId: string, tasks: ManifestTask[]): Manifest => ({
        version: 1,
        run_id: runId,
        started_at: '2026-01-01T00:00:00.000Z',
        finished_at: '2026-01-01T00:01:00.000Z',
        format: 'ndjson',
        status: 'ok',
        tasks,
        deletions: [],
      });
      mkdirSync(join(dir, '_manifests'));
      const write = (m: Manifest) => writeFileSync(join(dir, '_manifests', `${m.run_id}.json`), JSON.stringify(m));
      // an older full night, then an incremental one, then another shard's run (not ours)
      write(
        manifest('20260101T000000.000Z-aaaa', [
          task('A1001', 'achievements', 1000, 'full', { checkpoint: { snapshot: 'x', seq: 1, final: false } }),
          task('A1001', 'achievements', 1000, 'full', { checkpoint: { snapshot: 'x', seq: 2, final: true } }),
          task('A1002', 'achievements', 4000, 'full'),
        ]),
      );
      write(
        manifest('20260102T000000.000Z-bbbb', [
          task('A1001', 'achievements', 10, 'incremental'),
          task('A1002', 'achievements', 3000, 'full', { status: 'failed', error: { code: 'E_X', message: 'x' } }),
        ]),
      );
      write(manifest('20260103T000000.000Z-cccc-s1of2', [task('A1001', 'achievements', 99_999, 'full')]));
      const sink = await openSink(dir, { s3: {}, readOnly: true });
      const est = await loadEstimates(sink, '20260104T000000.000Z-dddd');
      expect(Object.fromEntries(est)).toEqual({
        'A1001\u0000achievements': { incremental: 10, full: 2000 },
        'A1002\u0000achievements': { full: 4000 },
      });

      vi.useFakeTimers();
      const term = new FakeTerminal(100, 30);
      const clock = { now: 0 };
      const r = createReporter('tty', { stream: term as unknown as NodeJS.WriteStream, now: () => clock.now });
      await r.planned?.({
        sink,
        runId: '20260104T000000.000Z-dddd',
        tasks: [
          { ...ids('A1001'), mode: 'full', watermark: null },
          { ...ids('A1002'), mode: 'full', watermark: null },
        ],
      });
      r.emit({ event: 'run_start', run_id: 'r', dest: 'file:///x', format: 'ndjson', schools: 2, tasks: 2 });
      r.emit({ event: 'task_start', ...ids('A1001'), mode: 'full' });
      r.emit({ event: 'task_start', ...ids('A1002'), mode: 'full' });
      r.emit({ event: 'task_progress', ...ids('A1001'), rows: 500, pages: 5, bytes: 1 });
      r.emit({ event: 'task_progress', ...ids('A1002'), rows: 1000, pages: 10, bytes: 1 });
      clock.now = 3000;
      vi.advanceTimersByTime(250);
      expect(term.screen().join('\n')).toMatch(/A1001 achievements\s+full\s+500 rec\s+5 pg\s+25%/);
      const screen = term.screen().join('\n');
      expect(screen).toMatch(/A1002 achievements\s+full\s+1,000 rec\s+10 pg\s+25%/);
      // 1,500 read in 3 s; 1,500 + 3,000 left: ETA 9 s
      expect(screen).toMatch(/0\/2 tasks, 1,500 records read, 0 rows written, 500 records\/s, 3\.0 s, ETA 9\.0 s/);
      r.close();
      await sink.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('records read and rows written: the summary counts what the live display counts', () => {
  it('tallied counts the same events the display shows', async () => {
    const { tallied } = await import('../../src/pipeline/progress.ts');
    const events: RunEvent[] = [
      { event: 'run_start', run_id: 'r', dest: 'd', format: 'ndjson', schools: 1, tasks: 3 },
      { event: 'task_start', ...ids('A1001'), mode: 'full' },
      { event: 'resumed', ...ids('A1001'), seq: 2, pages: 100, rows: 100_000 },
      { event: 'task_progress', ...ids('A1001'), rows: 100_500, pages: 101, bytes: 1 },
      { event: 'task_committed', ...ids('A1001'), rows_written: 700, files: 2 },
      { event: 'task_done', ...ids('A1001'), rows: 100_600, files: 2, ms: 1 },
      { event: 'task_start', ...ids('A1002'), mode: 'full' },
      { event: 'task_progress', ...ids('A1002'), rows: 300, pages: 3, bytes: 1 },
      { event: 'resume_refused', ...ids('A1002'), reason: 'x' },
      { event: 'task_progress', ...ids('A1002'), rows: 50, pages: 1, bytes: 1 },
      { event: 'task_interrupted', ...ids('A1002'), code: 'E_ABORTED', message: 'x' },
      { event: 'task_start', ...ids('A1003', 'schools'), mode: 'full' },
      { event: 'task_done', ...ids('A1003', 'schools'), rows: 1, files: 1, ms: 1 },
    ];
    const r = tallied(createReporter('none'));
    for (const e of events) r.emit(e);
    // 600 after the checkpoint + 300 and 50 read by the interrupted task (read twice: both count) + 1
    expect(r.tally).toMatchObject({ recordsRead: 951, rowsWritten: 700, done: 2, unfinished: 1, total: 3 });
  });
});
