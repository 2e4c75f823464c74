import type { Row } from '../../src/table.ts';
import { writeRun, type Format } from './fixtures.ts';

/** Scenarios both loaders are tested against: hand-made runs with updates, deletions, restores and snapshots. */

export const R1 = '20240101T000000Z-0001';
export const R2 = '20240201T000000Z-0002';
export const R3 = '20240301T000000Z-0003';
export const R4 = '20240401T000000Z-0004';

export const ach = (id: string, points: number, updated: string, extra: Partial<Row> = {}): Row => ({
  id,
  points,
  score: points / 2,
  comment: `c${id}`,
  parents_notified: points > 2,
  details: JSON.stringify({ p: points }),
  updated_at: `${updated}T00:00:00.000000Z`,
  updated_at__timezone: 'Europe/London',
  ...extra,
});
export const stu = (achievement_id: string, id: string): Row => ({ achievement_id, id });
export const del = (id: string, deleted: string | null, restored: string | null = null): Row => ({
  type: 'achievement',
  id,
  mis_id: `m${id}`,
  deleted_at: deleted && `${deleted}T00:00:00.000000Z`,
  deleted_at__timezone: deleted && 'UTC',
  restored_at: restored && `${restored}T00:00:00.000000Z`,
  restored_at__timezone: restored && 'UTC',
  detected_by: 'api',
  table: 'achievements',
});

export const ACH_SQL = `SELECT _school_id, id, points, score, comment, parents_notified, details::VARCHAR AS details, updated_at::VARCHAR AS updated_at, _extra::VARCHAR AS _extra, _run_id FROM achievements ORDER BY _school_id, id`;
export const STU_SQL = `SELECT _school_id, achievement_id, id, _run_id FROM achievement_students ORDER BY ALL`;
export const ids = (rows: Record<string, unknown>[]): string[] => rows.map((r) => `${r._school_id}/${r.id}`);

/** Run 1 full, run 2 incremental: updates, a deletion, a new row, a child dropped. */
export async function writeFirstTwoRuns(dest: string, format: Format): Promise<void> {
  await writeRun(dest, R1, format, [
    {
      school: 'A1',
      resource: 'achievements',
      mode: 'full',
      tables: {
        achievements: [ach('A10', 1, '2024-01-01'), ach('A11', 2, '2024-01-01'), ach('A12', 3, '2024-01-01')],
        achievement_students: [stu('A10', 'A900'), stu('A10', 'A901'), stu('A11', 'A902')],
      },
    },
    // Same ids at another school: rows are per school.
    {
      school: 'A2',
      resource: 'achievements',
      mode: 'full',
      tables: { achievements: [ach('A10', 7, '2024-01-01')], achievement_students: [] },
    },
    { school: 'A1', resource: 'school_meta', mode: 'full', tables: { school_meta: [{ online: true, approved: true }] } },
    {
      school: 'A1',
      resource: 'school_permissions',
      mode: 'full',
      tables: {
        school_permissions: [
          { identity: 'achievements.read', approved: true },
          { identity: 'students.read', approved: true },
        ],
      },
    },
  ]);
  await writeRun(dest, R2, format, [
    {
      school: 'A1',
      resource: 'achievements',
      mode: 'incremental',
      tables: {
        achievements: [
          ach('A10', 5, '2024-02-01', { comment: 'with, "quotes"\nand a newline', details: null }),
          ach('A13', 4, '2024-02-01', { comment: '', house: 'red' }),
        ],
        achievement_students: [stu('A10', 'A900')], // A901 no longer attached to A10
      },
    },
    {
      school: 'A1',
      resource: 'deletions',
      mode: 'incremental',
      tables: { deletions: [del('A11', '2024-02-02'), del('A12', '2024-02-02')] },
    },
    { school: 'A1', resource: 'school_meta', mode: 'full', tables: { school_meta: [{ online: false, approved: true }] } },
    // A failed task: even if its files were listed, they must not load.
    {
      school: 'A2',
      resource: 'achievements',
      mode: 'incremental',
      status: 'failed',
      tables: { achievements: [ach('A10', 99, '2024-02-01')] },
    },
  ]);
}

/** Run 3 restores A12; run 4 is a full snapshot without A13 (gone) and with a new A14. */
export async function writeLaterRuns(dest: string, format: Format): Promise<void> {
  await writeRun(dest, R3, format, [
    { school: 'A1', resource: 'deletions', mode: 'incremental', tables: { deletions: [del('A12', '2024-02-02', '2024-03-01')] } },
  ]);
  await writeRun(dest, R4, format, [
    {
      school: 'A1',
      resource: 'achievements',
      mode: 'full',
      tables: {
        achievements: [ach('A10', 5, '2024-02-01'), ach('A12', 3, '2024-01-01'), ach('A14', 1, '2024-03-15')],
        achievement_students: [stu('A10', 'A900'), stu('A14', 'A903')],
      },
    },
    {
      school: 'A1',
      resource: 'school_permissions',
      mode: 'full',
      tables: { school_permissions: [{ identity: 'achievements.read', approved: true }] },
    },
  ]);
}
