import { afterEach, describe, expect, it, vi } from 'vitest';
import { createReporter, formatElapsed, levelOf, type RunEvent } from '../../src/pipeline/progress.ts';

/** A stream that keeps what was written; isTTY as asked. */
function capture(isTTY: boolean): { stream: NodeJS.WriteStream; text: () => string; lines: () => string[]; reset: () => void } {
  let chunks: string[] = [];
  const stream = {
    isTTY,
    write(s: string) {
      chunks.push(s);
      return true;
    },
  } as unknown as NodeJS.WriteStream;
  return {
    stream,
    text: () => chunks.join(''),
    lines: () => chunks.join('').split('\n').filter(Boolean),
    reset: () => (chunks = []),
  };
}

const ids = { school_id: 'A1001', resource: 'achievements' };
const EVERY: RunEvent[] = [
  { event: 'run_start', run_id: 'r', dest: 'file:///x', format: 'ndjson', schools: 1, tasks: 2 },
  { event: 'task_start', ...ids, mode: 'full', reason: 'first run' },
  { event: 'task_progress', ...ids, rows: 10, pages: 1, bytes: 100 },
  { event: 'checkpoint', ...ids, seq: 1, pages: 4, rows: 20 },
  { event: 'resumed', ...ids, seq: 1, pages: 4, rows: 20 },
  { event: 'resume_refused', ...ids, reason: 'HTTP 400' },
  { event: 'task_committed', ...ids, rows_written: 12, files: 1 },
  { event: 'task_done', ...ids, rows: 10, files: 1, ms: 5 },
  { event: 'task_failed', ...ids, code: 'E_HTTP', message: 'boom' },
  { event: 'task_skipped', ...ids, code: 'E_PURGED', message: 'purged' },
  { event: 'task_interrupted', ...ids, code: 'E_ABORTED', message: 'stopped' },
  { event: 'school_skipped', school_id: 'A1002', reason: 'inactive' },
  { event: 'scope_masked', school_id: 'A1001', columns: ['achievements.comment'] },
  { event: 'lease_wait', holder: 'host 1' },
  { event: 'retry', url: 'https://x/v1.0/schools', attempt: 1, delay_ms: 100, reason: '503' },
  { event: 'run_done', run_id: 'r', status: 'ok', ms: 9 },
];

afterEach(() => {
  vi.useRealTimers();
});

describe('levelOf', () => {
  it('gives every event its level', () => {
    expect(Object.fromEntries(EVERY.map((e) => [e.event, levelOf(e)]))).toEqual({
      run_start: 'info',
      task_start: 'info',
      task_progress: 'debug',
      task_committed: 'debug',
      checkpoint: 'info',
      resumed: 'info',
      resume_refused: 'warn',
      task_done: 'info',
      task_failed: 'error',
      task_skipped: 'warn',
      task_interrupted: 'warn',
      school_skipped: 'warn',
      scope_masked: 'warn',
      lease_wait: 'warn',
      retry: 'warn',
      run_done: 'info',
    });
    expect(levelOf({ event: 'run_done', run_id: 'r', status: 'partial', ms: 1 })).toBe('warn');
  });
});

describe('JSON log lines', () => {
  it('one object per line: level, time (ISO 8601 UTC), event, then the fields', () => {
    vi.useFakeTimers({ now: new Date('2026-05-06T07:08:09.010Z') });
    const out = capture(false);
    const r = createReporter('json', { stream: out.stream });
    r.emit({ event: 'task_failed', ...ids, code: 'E_HTTP', message: 'boom' });
    r.close();
    expect(out.text().endsWith('\n')).toBe(true);
    const line = out.lines()[0]!;
    expect(Object.keys(JSON.parse(line)).slice(0, 3)).toEqual(['level', 'time', 'event']);
    expect(JSON.parse(line)).toEqual({
      level: 'error',
      time: '2026-05-06T07:08:09.010Z',
      event: 'task_failed',
      school_id: 'A1001',
      resource: 'achievements',
      code: 'E_HTTP',
      message: 'boom',
    });
  });

  it('drops events below the level asked for (info by default)', () => {
    const emitted = (level?: 'debug' | 'info' | 'warn' | 'error') => {
      const out = capture(false);
      const r = createReporter('json', { stream: out.stream, ...(level ? { level } : {}) });
      for (const e of EVERY) r.emit(e);
      return out.lines().map((l) => (JSON.parse(l) as { event: string }).event);
    };
    expect(emitted('debug')).toEqual(EVERY.map((e) => e.event));
    expect(emitted()).toEqual(EVERY.map((e) => e.event).filter((e) => e !== 'task_progress' && e !== 'task_committed'));
    expect(emitted('warn')).toEqual([
      'resume_refused',
      'task_failed',
      'task_skipped',
      'task_interrupted',
      'school_skipped',
      'scope_masked',
      'lease_wait',
      'retry',
    ]);
    expect(emitted('error')).toEqual(['task_failed']);
  });

  it('auto picks JSON when the stream is not a terminal; none writes nothing', () => {
    const out = capture(false);
    createReporter('auto', { stream: out.stream }).emit(EVERY[0]!);
    expect(JSON.parse(out.lines()[0]!)).toMatchObject({ event: 'run_start', level: 'info' });
    const quiet = capture(false);
    const r = createReporter('none', { stream: quiet.stream });
    for (const e of EVERY) r.emit(e);
    r.close();
    expect(quiet.text()).toBe('');
  });
});

describe('the terminal display', () => {
  it('auto picks it on a TTY; it redraws a live block and never prints a line per failed, skipped or interrupted task', () => {
    vi.useFakeTimers();
    let now = 0;
    const out = capture(true);
    const r = createReporter('auto', { stream: out.stream, now: () => now });
    r.emit({ event: 'run_start', run_id: 'r1', dest: 'file:///x', format: 'ndjson', schools: 2, tasks: 4 });
    expect(out.text()).toContain('run r1: 2 schools, 4 tasks -> file:///x (ndjson)');
    expect(() => JSON.parse(out.lines()[0]!)).toThrow();

    r.emit({ event: 'task_start', school_id: 'A1001', resource: 'achievements', mode: 'full' });
    r.emit({ event: 'task_start', school_id: 'A1002', resource: 'achievements', mode: 'incremental' });
    r.emit({ event: 'task_progress', school_id: 'A1001', resource: 'achievements', rows: 500, pages: 5, bytes: 1 });
    now = 2000;
    out.reset();
    vi.advanceTimersByTime(250);
    expect(out.text()).toMatch(/0\/4 tasks, 500 records read, 0 rows written, 250 records\/s, 2\.0 s/);
    expect(out.text()).toMatch(/A1001 achievements\s+full\s+500 rec\s+5 pg/);
    expect(out.text()).toMatch(/A1002 achievements\s+incr\s+0 rec/);

    out.reset();
    r.emit({
      event: 'task_failed',
      school_id: 'A1002',
      resource: 'achievements',
      code: 'E_HTTP_RETRIES',
      message: 'gave up after 5 attempts',
    });
    r.emit({ event: 'task_skipped', school_id: 'A1003', resource: 'school_meta', code: 'E_PURGED', message: 'its data was purged' });
    r.emit({ event: 'task_interrupted', school_id: 'A1001', resource: 'achievements', code: 'E_ABORTED', message: 'interrupted' });
    vi.advanceTimersByTime(250);
    const after = out.text();
    for (const s of ['E_HTTP_RETRIES', 'gave up', 'E_PURGED', 'purged', 'E_ABORTED', 'A1002', 'A1003']) expect(after).not.toContain(s);
    expect(after).toMatch(/0\/4 tasks, 3 (not finished|unfinished)/);
    expect(after).toMatch(/500 (records )?read/); // what the interrupted task read still counts
    expect(after).not.toMatch(/A1001 achievements/); // no longer active

    r.close();
    out.reset();
    vi.advanceTimersByTime(1000);
    expect(out.text()).toBe(''); // no redraw after close
  });

  it('prints one line for a resume, a refused cursor, a skipped school, masked scope and a lease wait', () => {
    vi.useFakeTimers();
    const out = capture(true);
    const r = createReporter('tty', { stream: out.stream, now: () => 0 });
    r.emit({ event: 'resumed', ...ids, seq: 2, pages: 100, rows: 5000 });
    r.emit({ event: 'resume_refused', ...ids, reason: 'HTTP 400' });
    r.emit({ event: 'school_skipped', school_id: 'A1002', reason: 'school A1002 is inactive' });
    r.emit({ event: 'scope_masked', school_id: 'A1003', columns: ['achievements.comment'] });
    r.emit({ event: 'lease_wait', holder: 'run x on host y' });
    r.emit({ event: 'retry', url: 'u', attempt: 1, delay_ms: 1, reason: '503' });
    r.emit({ event: 'checkpoint', ...ids, seq: 1, pages: 4, rows: 20 });
    r.close();
    const t = out.text();
    expect(t).toContain('resuming A1001 achievements from page 101 (5,000 rows committed before)');
    expect(t).toContain('A1001 achievements: the saved cursor was refused; reading again from page 1');
    expect(t).toContain('skipped A1002: school A1002 is inactive');
    expect(t).toContain('A1003: no scope for achievements.comment (exported as null)');
    expect(t).toContain('waiting for the run holding the destination: run x on host y');
    expect(t).not.toContain('503');
  });
});

describe('formatElapsed', () => {
  it('seconds with a tenth, then minutes, then hours', () => {
    expect(formatElapsed(0)).toBe('0.0 s');
    expect(formatElapsed(59.94)).toBe('59.9 s');
    expect(formatElapsed(60)).toBe('1 min 0 s');
    expect(formatElapsed(3599)).toBe('59 min 59 s');
    expect(formatElapsed(3600 * 25 + 61)).toBe('25 h 1 min');
  });
});
