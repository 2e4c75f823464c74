import { describe, expect, it } from 'vitest';
import {
  checkpointResource,
  dropCheckpoint,
  emptyState,
  nextWatermark,
  promoteResource,
  snapshotDue,
  updatedAfterParam,
  type CommittedRead,
} from '../../src/manifest/state.ts';
import type { ResourceState } from '../../src/manifest/types.ts';

const CHECKPOINT: NonNullable<ResourceState['checkpoint']> = {
  snapshot: '20260101T000000.000Z-aaaa',
  seq: 2,
  walks: [{ next: '/v1.0/schools/A1001/achievements?cursor=c1.x&per_page=5' }],
  pages: 8,
  rows: 40,
  started_at: '2026-01-01T00:00:03.000Z',
  ids_files: ['_state/ids/region=uk/school_id=A1001/assessment_results-20260101T000000.000Z-aaaa-part0001.json.gz'],
};

const read = (o: Partial<CommittedRead> = {}): CommittedRead => ({
  runId: '20260102T000000.000Z-bbbb',
  mode: 'incremental',
  taskStart: new Date('2026-01-02T00:00:05.250Z'),
  watermark: '2026-01-02T00:00:05.000Z',
  scopeMasked: [],
  ...o,
});

describe('updatedAfterParam', () => {
  it('sends naive UTC (no zone, no fraction) the lookback before the watermark', () => {
    expect(updatedAfterParam('2026-03-29T01:30:00.000Z', 600)).toBe('2026-03-29 01:20:00');
    expect(updatedAfterParam('2026-01-01T00:00:59.999Z', 0)).toBe('2026-01-01 00:00:59');
    // The lookback crosses midnight and a year boundary.
    expect(updatedAfterParam('2026-01-01T00:01:00.000Z', 120)).toBe('2025-12-31 23:59:00');
  });
});

describe('nextWatermark', () => {
  it('is the task start floored to the second', () => {
    expect(nextWatermark(undefined, new Date('2026-01-02T03:04:05.999Z'))).toBe('2026-01-02T03:04:05.000Z');
    expect(nextWatermark(null, new Date('2026-01-02T03:04:05.000Z'))).toBe('2026-01-02T03:04:05.000Z');
  });
  it('never moves backwards, and moves forwards from an older watermark', () => {
    expect(nextWatermark('2026-02-01T00:00:00.000Z', new Date('2026-01-01T00:00:00Z'))).toBe('2026-02-01T00:00:00.000Z');
    expect(nextWatermark('2025-12-01T00:00:00.000Z', new Date('2026-01-01T00:00:00.500Z'))).toBe('2026-01-01T00:00:00.000Z');
  });
});

describe('snapshotDue', () => {
  const now = new Date('2026-01-08T00:00:00Z');
  it('is due without a previous snapshot, whatever the interval (0 included)', () => {
    expect(snapshotDue(undefined, 168, now)).toBe(true);
    expect(snapshotDue(null, 0, now)).toBe(true);
  });
  it('is due exactly when the interval has passed', () => {
    expect(snapshotDue('2026-01-01T00:00:00.000Z', 168, now)).toBe(true);
    expect(snapshotDue('2026-01-01T00:00:00.001Z', 168, now)).toBe(false);
    expect(snapshotDue('2026-01-07T23:00:00.000Z', 1, now)).toBe(true);
  });
  it('0 (or less) means never once a first snapshot exists', () => {
    expect(snapshotDue('2020-01-01T00:00:00.000Z', 0, now)).toBe(false);
    expect(snapshotDue('2020-01-01T00:00:00.000Z', -1, now)).toBe(false);
  });
});

describe('promoteResource', () => {
  it('a first incremental read has no full snapshot yet', () => {
    expect(promoteResource(undefined, read())).toEqual({
      watermark: '2026-01-02T00:00:05.000Z',
      last_run_id: '20260102T000000.000Z-bbbb',
      last_full_at: null,
    });
  });

  it('a full read records when it began, its id list and the directive generation it satisfies', () => {
    const next = promoteResource(
      { watermark: '2026-01-01T00:00:00.000Z', last_run_id: 'old', last_full_at: null, known_ids_file: 'old.json.gz' },
      read({ mode: 'full', snapshotIdsFile: 'new.json.gz', forceFullSeq: 3 }),
    );
    expect(next).toEqual({
      watermark: '2026-01-02T00:00:05.000Z',
      last_run_id: '20260102T000000.000Z-bbbb',
      last_full_at: '2026-01-02T00:00:05.250Z',
      known_ids_file: 'new.json.gz',
      applied_force_full_seq: 3,
    });
  });

  it('an incremental read keeps the last full snapshot, id list and directive generation', () => {
    const prev: ResourceState = {
      watermark: '2026-01-01T00:00:00.000Z',
      last_run_id: 'old',
      last_full_at: '2025-12-25T00:00:00.000Z',
      known_ids_file: 'kept.json.gz',
      applied_force_full_seq: 2,
    };
    expect(promoteResource(prev, read())).toEqual({
      ...prev,
      watermark: '2026-01-02T00:00:05.000Z',
      last_run_id: '20260102T000000.000Z-bbbb',
    });
  });

  it("records the personal-data policy fingerprint the rows were written with ('keep' is not recorded)", () => {
    expect(promoteResource(undefined, read({ personalData: 'fp1' })).personal_data).toBe('fp1');
    const prev: ResourceState = { watermark: null, last_run_id: null, last_full_at: null, personal_data: 'fp1' };
    expect(promoteResource(prev, read({ personalData: 'keep' }))).not.toHaveProperty('personal_data');
    expect(promoteResource(prev, read())).not.toHaveProperty('personal_data');
  });

  it('drops a finished checkpoint and an old scope mask; records a new mask sorted', () => {
    const prev: ResourceState = {
      watermark: null,
      last_run_id: null,
      last_full_at: null,
      checkpoint: CHECKPOINT,
      scope_masked: ['achievements.comment'],
    };
    const done = promoteResource(prev, read({ mode: 'full' }));
    expect(done.checkpoint).toBeUndefined();
    expect(done.scope_masked).toBeUndefined();
    const masked = promoteResource(prev, read({ scopeMasked: ['achievements.parents_notified', 'achievements.comment'] }));
    expect(masked.scope_masked).toEqual(['achievements.comment', 'achievements.parents_notified']);
  });
});

describe('checkpointResource and dropCheckpoint', () => {
  it('a checkpoint of a first read starts from nothing committed', () => {
    expect(checkpointResource(undefined, CHECKPOINT)).toEqual({
      watermark: null,
      last_run_id: null,
      last_full_at: null,
      checkpoint: CHECKPOINT,
    });
  });

  it('a checkpoint keeps the committed watermark and replaces an earlier checkpoint', () => {
    const prev: ResourceState = {
      watermark: '2026-01-01T00:00:00.000Z',
      last_run_id: 'old',
      last_full_at: '2025-12-25T00:00:00.000Z',
      known_ids_file: 'kept.json.gz',
      checkpoint: { ...CHECKPOINT, seq: 1, pages: 4 },
    };
    const next = checkpointResource(prev, CHECKPOINT);
    expect(next).toEqual({ ...prev, checkpoint: CHECKPOINT });
    expect(prev.checkpoint!.seq).toBe(1); // the previous state object is not changed
  });

  it('dropCheckpoint removes only the checkpoint', () => {
    const prev: ResourceState = { watermark: 'w', last_run_id: 'r', last_full_at: null, checkpoint: CHECKPOINT };
    expect(dropCheckpoint(prev)).toEqual({ watermark: 'w', last_run_id: 'r', last_full_at: null });
    expect(prev.checkpoint).toBe(CHECKPOINT);
  });

  it('emptyState names the school and holds no resources', () => {
    expect(emptyState('A1001', 'uk')).toEqual({ version: 1, school_id: 'A1001', region: 'uk', resources: {} });
  });
});
