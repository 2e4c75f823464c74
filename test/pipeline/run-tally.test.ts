import { describe, expect, it } from 'vitest';
import { tallied, type Reporter } from '../../src/pipeline/progress.ts';
import { taskKey } from '../../src/pipeline/run-tally.ts';
import type { Sink } from '../../src/sink/types.ts';

const silent: Reporter = { emit: () => undefined, close: () => undefined };

describe('RunTally: the watermarks before the run', () => {
  it('keeps them only for tasks not done yet (the lag of a task that does not commit)', async () => {
    const r = tallied(silent);
    const tasks = ['achievements', 'groups', 'people'].map((resource, i) => ({
      school_id: 'A1001',
      resource,
      mode: 'incremental' as const,
      watermark: `2026-03-10T0${i}:00:00.000Z`,
    }));
    await r.planned!({ sink: {} as Sink, runId: 'r', tasks });
    expect(r.tally.previous.size).toBe(3);
    const ids = (resource: string) => ({ school_id: 'A1001', resource });
    for (const resource of ['achievements', 'groups']) r.emit({ event: 'task_start', ...ids(resource), mode: 'incremental' });
    r.emit({ event: 'task_done', ...ids('achievements'), rows: 1, files: 1, ms: 1 });
    r.emit({ event: 'task_failed', ...ids('groups'), code: 'E_HTTP', message: 'm' });
    // a run of 100,000 tasks would otherwise hold them all to its end
    expect([...r.tally.previous.keys()].sort()).toEqual([taskKey('A1001', 'groups'), taskKey('A1001', 'people')]);
    expect(r.tally.previous.get(taskKey('A1001', 'groups'))).toBe('2026-03-10T01:00:00.000Z');
  });
});
