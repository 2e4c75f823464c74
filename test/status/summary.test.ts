import { describe, expect, it } from 'vitest';
import type { StatusReport, TaskStatus } from '../../src/status/collect.ts';
import { renderStatus, statusLines } from '../../src/status/render.ts';
import { median, selectTasks, summariseStatus, worstTasks } from '../../src/status/summary.ts';

const TABLES = [
  'schools',
  'school_meta',
  'school_permissions',
  'school_acl',
  'achievements',
  'achievement_attributes',
  'assessment_aspects',
  'assessment_results',
  'assessment_resultsets',
  'deletions',
];

function task(school: number, resource: string, lag: number | null, o: Partial<TaskStatus> = {}): TaskStatus {
  const now = Date.parse('2030-01-01T00:00:00.000Z');
  return {
    type: 'task',
    school_id: `A${school}`,
    region: 'uk',
    resource,
    watermark: lag === null ? null : new Date(now - lag * 1000).toISOString(),
    lag_seconds: lag,
    last_run_id: lag === null ? null : '20291231T010000.000Z-aaaa',
    last_full_at: null,
    checkpoint: null,
    last_failure: null,
    ...o,
  };
}

const fail = (run = '20291231T010000.000Z-bbbb') => ({
  last_failure: { run_id: run, status: 'failed', code: 'E_FORBIDDEN', message: 'x' },
});

/** 10,000 schools × 10 tables: lags 3600 + school number seconds; a few failing, resuming, never committed. */
let big: StatusReport | undefined;
function bigReport(): StatusReport {
  if (big) return big;
  const tasks: TaskStatus[] = [];
  for (let i = 0; i < 10_000; i++) {
    for (const table of TABLES) {
      const school = 10_000 + i;
      if (table === 'achievements' && i % 1000 === 7) tasks.push(task(school, table, 3600 + i, fail()));
      else if (table === 'achievements' && i === 42) tasks.push(task(school, table, null, fail()));
      else if (table === 'assessment_results' && i % 2500 === 0)
        tasks.push(task(school, table, 3600 + i, { checkpoint: { pages: 10, rows: 10_000, started_at: 'x' } }));
      else tasks.push(task(school, table, 3600 + i));
    }
  }
  big = { dest: 's3://b/exports', tasks, runs: [], deactivated: [], locks: [], problems: [] };
  return big;
}

describe('status summary', () => {
  it('per table: schools, oldest and median lag, never committed, failing, resuming', () => {
    const s = summariseStatus(bigReport());
    expect(s.schools).toBe(10_000);
    expect(s.tables.map((t) => t.table)).toEqual([...TABLES].sort());
    const ach = s.tables.find((t) => t.table === 'achievements')!;
    // lags 3600..13599 less the never-committed school 42
    expect(ach).toEqual({
      type: 'table',
      table: 'achievements',
      schools: 10_000,
      never_committed: 1,
      oldest_lag_seconds: 3600 + 9_999,
      median_lag_seconds: 3600 + 5_000,
      failing: 11,
      resuming: 0,
    });
    expect(s.tables.find((t) => t.table === 'schools')).toMatchObject({
      oldest_lag_seconds: 13_599,
      median_lag_seconds: 8_600,
      failing: 0,
    });
    expect(s.tables.find((t) => t.table === 'assessment_results')).toMatchObject({ resuming: 4 });
  });

  it('the worst ten: failing first (never committed the worst of them), then by lag', () => {
    const worst = summariseStatus(bigReport()).worst;
    expect(worst.map((t) => `${t.school_id} ${t.resource}`)).toEqual([
      'A10042 achievements',
      'A19007 achievements',
      'A18007 achievements',
      'A17007 achievements',
      'A16007 achievements',
      'A15007 achievements',
      'A14007 achievements',
      'A13007 achievements',
      'A12007 achievements',
      'A11007 achievements',
    ]);
    expect(worstTasks([task(1, 'a', 5), task(2, 'a', 50), task(3, 'b', null)], 2).map((t) => t.school_id)).toEqual(['A3', 'A2']);
  });

  it('at 10,000 schools the default text is under 100 lines; --json has every task and a line per table', () => {
    const r = bigReport();
    const summary = summariseStatus(r);
    const text = renderStatus(r, { summary });
    const lines = text.trimEnd().split('\n');
    expect(lines.length).toBeLessThanOrEqual(100);
    expect(text).toContain('TABLES (10,000 schools;');
    expect(text).toMatch(/\nachievements\s+10,000\s+3h 46m\s+2h 23m\s+1\s+11\s+0\n/);
    expect(text).toMatch(/WORST 10 /);
    const json = statusLines(r, { summary }).map((l) => JSON.parse(l) as { type: string });
    expect(json.filter((l) => l.type === 'task')).toHaveLength(100_000);
    expect(json.filter((l) => l.type === 'table')).toHaveLength(10);
  });

  it('problems and deactivated schools are listed up to ten, then counted', () => {
    const r: StatusReport = {
      ...bigReport(),
      problems: Array.from({ length: 25 }, (_, i) => `_state/region=uk/school_id=A${i}.json: unreadable`),
      deactivated: Array.from({ length: 12 }, (_, i) => ({
        type: 'deactivated' as const,
        school_id: `A${i}`,
        reason: 'r',
        event: 'accessRevoked',
        at: 'x',
      })),
    };
    const text = renderStatus(r, { summary: summariseStatus(r) });
    expect(text.match(/^problem: /gm)).toHaveLength(10);
    expect(text).toContain('... and 15 more problems (all of them with --json)');
    expect(text).toContain('DEACTIVATED BY WEBHOOKS (skipped by runs): 12 schools');
    expect(text).toContain('... and 2 more (all of them with --json)');
  });

  it('selectTasks and median', () => {
    const tasks = [task(1, 'a', 1, fail()), task(1, 'b', 2), task(2, 'a', 3)];
    expect(selectTasks(tasks, { table: 'a' })).toHaveLength(2);
    expect(selectTasks(tasks, { failing: true })).toHaveLength(1);
    expect(selectTasks(tasks, { table: 'b', failing: true })).toHaveLength(0);
    expect(selectTasks(tasks, {})).toHaveLength(3);
    expect(median([1, 2, 3])).toBe(2);
    expect(median([1, 2, 3, 10])).toBe(3);
  });

  it('a section another part keeps in the destination (the webhook queue) is shown as text and as a JSON line', () => {
    const r = bigReport();
    const section = { text: 'WEBHOOK QUEUE\n  2 schools waiting: A1, A2\n', json: { type: 'webhook_queue', waiting: 2 } };
    expect(renderStatus(r, { summary: summariseStatus(r), sections: [section] })).toContain(
      '\nWEBHOOK QUEUE\n  2 schools waiting: A1, A2\n',
    );
    expect(statusLines(r, { sections: [section] })).toContain(JSON.stringify(section.json));
  });
});
