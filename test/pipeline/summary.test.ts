import { describe, expect, it } from 'vitest';
import { renderSummary, summarise, type SummaryInputs } from '../../src/pipeline/summary.ts';
import type { Manifest, ManifestTask } from '../../src/manifest/types.ts';
import { describePolicy } from '../../src/privacy/policy.ts';

const RUN = '20260102T000000.000Z-bbbb';
const EARLIER = '20260101T000000.000Z-aaaa';

let fileNo = 0;
function entry(
  school: string,
  resource: string,
  o: Partial<ManifestTask> & { rows?: Record<string, number>; bytes?: number } = {},
): ManifestTask {
  const { bytes = 1000, ...rest } = o;
  const rows = o.rows ?? (o.status && o.status !== 'committed' ? {} : { [resource]: 10 });
  return {
    school_id: school,
    region: 'uk',
    resource,
    status: 'committed',
    mode: 'full',
    files: Object.entries(rows).map(([table, n]) => ({
      table,
      path: `${table}/region=uk/school_id=${school}/${RUN}-${String(++fileNo).padStart(4, '0')}.ndjson`,
      rows: n,
      bytes,
      sha256: 'x',
    })),
    ...rest,
    rows,
  };
}
const piece = (snapshot: string, seq: number, final: boolean) => ({ checkpoint: { snapshot, seq, final } });
const err = (code: string, message: string) => ({ error: { code, message } });

function manifest(tasks: ManifestTask[], o: Partial<Manifest> = {}): Manifest {
  return {
    version: 1,
    run_id: RUN,
    started_at: '2026-01-02T00:00:00.000Z',
    finished_at: '2026-01-02T00:00:10.000Z',
    format: 'ndjson',
    status: 'partial',
    tasks,
    deletions: [],
    ...o,
  };
}

const inputs = (o: Partial<SummaryInputs> = {}): SummaryInputs => ({
  deactivated: [],
  scopeMasked: {},
  durationMs: 2000,
  dest: 'file:///out',
  requests: 42,
  notes: [],
  failRun: false,
  ...o,
});

describe('summarise', () => {
  const tasks = [
    // Committed in three pieces in this run.
    entry('A1001', 'assessment_results', piece(RUN, 1, false)),
    entry('A1001', 'assessment_results', piece(RUN, 2, false)),
    entry('A1001', 'assessment_results', { ...piece(RUN, 3, true), rows: { assessment_results: 10, deletions: 2 } }),
    // Resumed: its snapshot began in an earlier run.
    entry('A1001', 'achievements', { ...piece(EARLIER, 3, false), drift_fields: { achievements: ['zeta', 'alpha'] } }),
    entry('A1001', 'achievements', { ...piece(EARLIER, 4, true), drift_fields: { achievements: ['alpha'], achievement_students: ['x'] } }),
    // Interrupted after one checkpoint piece.
    entry('A1002', 'achievements', piece(RUN, 1, false)),
    entry('A1002', 'achievements', { status: 'interrupted', ...err('E_ABORTED', 'the run was interrupted') }),
    // Failed before anything was committed.
    entry('A1002', 'school_meta', { status: 'failed', ...err('E_HTTP_RETRIES', 'gave up after 5 attempts') }),
    // A school skipped at planning (one entry standing for the school).
    entry('A1003', '*', { status: 'skipped', ...err('E_SCHOOL_INACTIVE', 'school A1003 is inactive') }),
    // Purged while it ran: its first piece committed, its final piece retracted.
    entry('A1004', 'achievements', piece(RUN, 1, false)),
    entry('A1004', 'achievements', { status: 'skipped', ...piece(RUN, 2, true), ...err('E_PURGED', 'its data was purged') }),
    // Stopped before it began.
    entry('A1005', 'achievements', { status: 'not_started', ...err('E_ABORTED', 'interrupted before this task began') }),
  ];

  it('counts an unchanged full read as committed, and as unchanged, with nothing written', () => {
    const unchanged = entry('A1', 'school_acl', { status: 'unchanged', rows: {}, content_sha256: 'ab', unchanged_since: EARLIER });
    const s = summarise(manifest([entry('A1', 'achievements'), unchanged], { status: 'ok' }), inputs());
    expect(s.status).toBe('ok');
    expect(s.failures).toEqual([]);
    expect(s.tasks).toMatchObject({ committed: 2, unchanged: 1, failed: 0 });
    expect(Object.keys(s.tables)).toEqual(['achievements']);
    expect(renderSummary(s)).toContain('tasks: 2 committed (1 unchanged: no file written), 0 failed');
  });

  it('counts each task once however many pieces it committed, and lists each unfinished task once', () => {
    const s = summarise(manifest(tasks, { deletions: [] }), inputs());
    expect(s.tasks).toEqual({
      committed: 2,
      failed: 1,
      skipped: 2,
      interrupted: 1,
      not_started: 1,
      resumed: 1,
      checkpoints: 5,
      unchanged: 0,
    });
    expect(s.status).toBe('partial');
    expect(s.failures).toEqual([
      {
        school_id: 'A1002',
        resource: 'achievements',
        status: 'interrupted',
        code: 'E_ABORTED',
        message: 'the run was interrupted (1 checkpoint piece(s) committed: the next run resumes)',
      },
      { school_id: 'A1002', resource: 'school_meta', status: 'failed', code: 'E_HTTP_RETRIES', message: 'gave up after 5 attempts' },
      { school_id: 'A1003', resource: '*', status: 'skipped', code: 'E_SCHOOL_INACTIVE', message: 'school A1003 is inactive' },
      // Skipped (purged): nothing resumes, whatever was committed before.
      { school_id: 'A1004', resource: 'achievements', status: 'skipped', code: 'E_PURGED', message: 'its data was purged' },
      {
        school_id: 'A1005',
        resource: 'achievements',
        status: 'not_started',
        code: 'E_ABORTED',
        message: 'interrupted before this task began',
      },
    ]);
  });

  it('adds up rows, files and bytes per table over every piece, and merges drift', () => {
    const s = summarise(manifest(tasks), inputs());
    expect(s.tables).toEqual({
      assessment_results: { rows: 30, files: 3, bytes: 3000 },
      deletions: { rows: 2, files: 1, bytes: 1000 },
      achievements: { rows: 40, files: 4, bytes: 4000 },
    });
    expect(s.drift).toEqual({ achievements: ['alpha', 'zeta'], achievement_students: ['x'] });
    // 72 rows and 8000 bytes in 2 s.
    expect(s.throughput).toEqual({
      rowsPerSecond: 36,
      megabytesPerSecond: +(8000 / 2 ** 20 / 2).toFixed(2),
      requests: 42,
      recordsRead: 0,
      recordsPerSecond: 0,
      rowsWritten: 72,
    });
  });

  it('throughput counts what was read, committed or not: an early interrupt reads many records and commits few rows', () => {
    const s = summarise(
      manifest([entry('A1001', 'school_meta', { rows: { school_meta: 1 } })], { status: 'interrupted' }),
      inputs({ tally: { recordsRead: 132_905, previous: new Map() }, durationMs: 5_000 }),
    );
    expect(s.throughput).toMatchObject({ recordsRead: 132_905, recordsPerSecond: 26_581, rowsWritten: 1, rowsPerSecond: 0 });
  });

  it('status: ok when every task committed, failed when the run failed, interrupted whatever else', () => {
    const done = [entry('A1001', 'school_meta'), entry('A1002', 'school_meta')];
    expect(summarise(manifest(done, { status: 'ok' }), inputs()).status).toBe('ok');
    expect(summarise(manifest(done, { status: 'ok' }), inputs({ failRun: true })).status).toBe('failed');
    expect(summarise(manifest(tasks, { status: 'interrupted' }), inputs({ failRun: true })).status).toBe('interrupted');
    expect(summarise(manifest([], { status: 'ok' }), inputs({ failRun: true, durationMs: 0 })).throughput.rowsPerSecond).toBe(0);
  });

  it('a task whose files were listed but whose state did not advance is one failure, with no promise of a resume', () => {
    // Not read in pieces: the next run reads it again from the start (the committer's E_STATE case).
    const listed = entry('A1001', 'achievements', err('E_STATE', 'state not advanced: disk full'));
    const s = summarise(manifest([listed]), inputs());
    expect(s.tasks).toMatchObject({ committed: 0, failed: 1, checkpoints: 0 });
    expect(s.failures).toEqual([
      { school_id: 'A1001', resource: 'achievements', status: 'failed', code: 'E_STATE', message: 'state not advanced: disk full' },
    ]);
  });

  it('passes on deletions, deactivated schools, masked scope, notes and the personal-data policy', () => {
    const m = manifest([entry('A1001', 'achievements')], {
      status: 'ok',
      deletions: [
        { school_id: 'A1001', type: 'achievement', id: '1', deleted_at: null, restored_at: null, detected_by: 'api' },
        { school_id: 'A1001', type: 'achievement', id: '2', deleted_at: null, restored_at: null, detected_by: 'api' },
      ],
      personal_data: { person_id: 'pseudonymise', direct_identifier: 'drop', free_text: 'keep' },
    });
    const s = summarise(m, inputs({ deactivated: ['A9003'], scopeMasked: { A1001: ['achievements.comment'] }, notes: ['a note'] }));
    expect(s).toMatchObject({
      runId: RUN,
      dest: 'file:///out',
      deletions: 2,
      deactivated: ['A9003'],
      scopeMasked: { A1001: ['achievements.comment'] },
      notes: ['a note'],
      personalData: { person_id: 'pseudonymise', direct_identifier: 'drop', free_text: 'keep' },
    });
    expect(summarise(manifest([]), inputs())).not.toHaveProperty('personalData');
  });
});

describe('renderSummary', () => {
  it('a headline, a table of totals, the task counts, throughput, then what to look at, each unfinished task once', () => {
    const tasks = [
      entry('A1001', 'achievements', { ...piece(EARLIER, 2, false), rows: { achievements: 1500, achievement_students: 10 }, bytes: 2048 }),
      entry('A1001', 'achievements', { ...piece(EARLIER, 3, true), rows: { achievements: 500 }, bytes: 3 * 2 ** 20 }),
      entry('A1001', 'school_meta', { drift_fields: { school_meta: ['f1', 'f2', 'f3', 'f4', 'f5', 'f6', 'f7', 'f8', 'f9'] } }),
      entry('A1002', 'achievements', piece(RUN, 1, false)),
      entry('A1002', 'achievements', { status: 'interrupted', ...err('E_ABORTED', 'interrupted') }),
      entry('A1003', 'achievements', { status: 'not_started', ...err('E_ABORTED', 'not begun') }),
    ];
    const text = renderSummary(
      summarise(
        manifest(tasks, { status: 'interrupted', personal_data: { person_id: 'keep', direct_identifier: 'keep', free_text: 'drop' } }),
        inputs({ durationMs: 61_000, deactivated: ['A9003'], scopeMasked: { A1001: ['achievements.comment'] }, notes: ['checked'] }),
      ),
    );
    const lines = text.split('\n');
    expect(lines[0]).toBe(`run ${RUN} INTERRUPTED in 1 min 1 s -> file:///out`);
    expect(lines[1]).toMatch(/^ {2}table\s+rows\s+files\s+bytes$/);
    expect(text).toMatch(/\n {2}achievements\s+2,010\s+3\s+3\.0 MiB\n/);
    expect(text).toMatch(/\n {2}achievement_students\s+10\s+1\s+2\.0 KiB\n/);
    expect(text).toMatch(/\n {2}total\s+2,030\s+5\s+3\.0 MiB\n/);
    expect(text).toContain('  tasks: 2 committed, 0 failed, 0 skipped, 1 interrupted, 1 not started, 1 resumed; deletions recorded: 0');
    expect(text).toContain('  throughput: 0 records read (0/s), 2,030 rows written (33/s), 0.05 MB/s written, 42 requests');
    // Worded by the privacy module (one description wherever the policy is shown).
    expect(text).toContain(`  ${describePolicy({ person_id: 'keep', direct_identifier: 'keep', free_text: 'drop' })}`);
    expect(text).toContain('  schema drift in school_meta: 9 undeclared field(s) seen: f1, f2, f3, f4, f5, f6, f7, f8, … (1 more)');
    expect(text).toContain('  no scope at A1001: achievements.comment exported as null');
    expect(text).toContain('  not exported (access revoked or declined): A9003');
    expect(text).toContain('  NOTE: checked');
    expect(text).toContain(
      '  INTERRUPTED A1002 achievements: [E_ABORTED] interrupted (1 checkpoint piece(s) committed: the next run resumes)',
    );
    expect(text).toContain('  NOT STARTED A1003 achievements: [E_ABORTED] not begun');
    expect(text.match(/A1002 achievements/g)).toHaveLength(1);
    // last, where it is seen: what the next run does about the unfinished tasks
    expect(lines.at(-1)).toBe(
      '  the next run resumes 1 task(s) from their checkpoints; 1 other unfinished task(s) start again from their last committed state',
    );
  });

  it('an ok run says finished and lists nothing else', () => {
    const text = renderSummary(summarise(manifest([entry('A1001', 'school_meta', { bytes: 10 })], { status: 'ok' }), inputs()));
    expect(text.split('\n')).toEqual([
      `run ${RUN} finished in 2.0 s -> file:///out`,
      expect.stringMatching(/^ {2}table/),
      expect.stringMatching(/^ {2}school_meta\s+10\s+1\s+10 B$/),
      expect.stringMatching(/^ {2}total\s+10\s+1\s+10 B$/),
      '  tasks: 1 committed, 0 failed, 0 skipped; deletions recorded: 0',
      '  throughput: 0 records read (0/s), 10 rows written (5/s), 0 MB/s written, 42 requests',
    ]);
  });
});

describe('renderSummary groups unfinished tasks', () => {
  const schools = (n: number, from = 1001) => Array.from({ length: n }, (_, i) => `A${from + i}`);
  const resources = ['achievements', 'assessment_results', 'school_acl'];

  it('an interrupt: 29 tasks not started and 2 interrupted are a few lines, counted by table, three examples each; the resume line stays last', () => {
    const tasks: ManifestTask[] = [
      ...schools(2).flatMap((sc) => [
        entry(sc, 'achievements', piece(RUN, 1, false)),
        entry(sc, 'achievements', { status: 'interrupted', ...err('E_ABORTED', 'the run was interrupted while this task ran') }),
      ]),
      ...schools(10, 1003).flatMap((sc, i) =>
        resources
          .slice(0, i === 9 ? 2 : 3)
          .map((r) => entry(sc, r, { status: 'not_started', ...err('E_ABORTED', 'the run was interrupted before this task began') })),
      ),
    ];
    const s = summarise(manifest(tasks, { status: 'interrupted' }), inputs());
    expect(s.failures).toHaveLength(31); // the JSON keeps every task
    const text = renderSummary(s);
    const lines = text.split('\n');
    const from = lines.findIndex((l) => l.includes('NOT STARTED'));
    expect(lines.slice(from)).toEqual([
      '  NOT STARTED [E_ABORTED] 29 tasks: the run was interrupted before this task began',
      '    achievements, assessment_results: 10 each (A1003, A1004, A1005 and 7 more)',
      '    school_acl: 9 (A1003, A1004, A1005 and 6 more)',
      '  INTERRUPTED [E_ABORTED] 2 tasks: the run was interrupted while this task ran',
      '    achievements: 2 (A1001, A1002)',
      '  the next run resumes 2 task(s) from their checkpoints; 29 other unfinished task(s) start again from their last committed state',
    ]);
  });

  it('a token without a scope at 12 schools: one group; messages that differ beyond the school are shown, three of them', () => {
    const forbidden = schools(12).map((sc) =>
      entry(sc, 'achievements', {
        status: 'failed',
        ...err('E_FORBIDDEN', `403 at /v1.0/schools/${sc}/achievements: the token lacks achievements.read`),
      }),
    );
    const retries = schools(4).map((sc, i) =>
      entry(sc, 'school_meta', { status: 'failed', ...err('E_HTTP_RETRIES', `gave up after ${i + 2} attempts`) }),
    );
    const text = renderSummary(summarise(manifest([...retries, ...forbidden]), inputs()));
    const lines = text.split('\n');
    const from = lines.findIndex((l) => l.includes('FAILED'));
    expect(lines.slice(from)).toEqual([
      '  FAILED [E_FORBIDDEN] 12 tasks: 403 at /v1.0/schools/<school>/achievements: the token lacks achievements.read',
      '    achievements: 12 (A1001, A1002, A1003 and 9 more)',
      '  FAILED [E_HTTP_RETRIES] 4 tasks',
      '    school_meta: 4, e.g.',
      '      A1001: gave up after 2 attempts',
      '      A1002: gave up after 3 attempts',
      '      A1003: gave up after 4 attempts',
    ]);
    expect(text).not.toContain('A1004: gave up');
    expect(text).not.toContain('next run resumes');
  });

  it('schools skipped as inactive are one group for all their tables', () => {
    const skipped = schools(5).map((sc) => entry(sc, '*', { status: 'skipped', ...err('E_SCHOOL_INACTIVE', `school ${sc} is inactive`) }));
    const lines = renderSummary(summarise(manifest(skipped), inputs())).split('\n');
    expect(lines.slice(lines.findIndex((l) => l.includes('SKIPPED')))).toEqual([
      '  SKIPPED [E_SCHOOL_INACTIVE] 5 tasks: school <school> is inactive',
      '    all tables: 5 (A1001, A1002, A1003 and 2 more)',
    ]);
  });
});
