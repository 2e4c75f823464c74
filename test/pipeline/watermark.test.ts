import { describe, expect, it } from 'vitest';
import { nextWatermark, snapshotDue, updatedAfterParam } from '../../src/manifest/state.ts';
import { shardOf } from '../../src/pipeline/shard.ts';
import { newRunId, RUN_ID_RE } from '../../src/manifest/run-id.ts';

describe('watermarks', () => {
  it('sends naive UTC minus the lookback', () => {
    expect(updatedAfterParam('2024-03-31T01:30:00.000Z', 300)).toBe('2024-03-31 01:25:00');
    expect(updatedAfterParam('2024-01-01T00:02:00.000Z', 300)).toBe('2023-12-31 23:57:00');
  });
  it('takes the task start, floored to the second, and never moves backwards', () => {
    expect(nextWatermark(null, new Date('2024-05-01T10:00:00.900Z'))).toBe('2024-05-01T10:00:00.000Z');
    expect(nextWatermark('2024-06-01T00:00:00.000Z', new Date('2024-05-01T10:00:00Z'))).toBe('2024-06-01T00:00:00.000Z');
  });
  it('schedules snapshots', () => {
    const now = new Date('2024-05-08T00:00:00Z');
    expect(snapshotDue(null, 168, now)).toBe(true);
    expect(snapshotDue('2024-05-01T00:00:00Z', 168, now)).toBe(true);
    expect(snapshotDue('2024-05-01T00:00:01Z', 168, now)).toBe(false);
    expect(snapshotDue('2024-01-01T00:00:00Z', 0, now)).toBe(false);
  });
});

describe('shards and run ids', () => {
  it('assigns each school to exactly one stable shard', () => {
    const ids = Array.from({ length: 200 }, (_, i) => `A${1000 + i * 7}`);
    const counts = [0, 0, 0, 0];
    for (const id of ids) {
      const s = shardOf(id, 4);
      expect(shardOf(id, 4)).toBe(s);
      counts[s]! += 1;
    }
    expect(counts.every((c) => c > 20)).toBe(true);
    expect(shardOf('A1', 1)).toBe(0);
  });
  it('run ids sort by start time and carry the shard', () => {
    const a = newRunId(new Date('2024-01-01T00:00:00Z'));
    const b = newRunId(new Date('2024-01-01T00:00:01Z'), { index: 2, count: 8 });
    expect(a < b).toBe(true);
    expect(b).toMatch(/-s2of8$/);
    expect(a).toMatch(RUN_ID_RE);
  });
});
