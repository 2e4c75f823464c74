import { selectResources } from '../../src/resources/index.ts';
import { describe, expect, it } from 'vitest';
import { planTask, type PlanSettings } from '../../src/pipeline/plan.ts';
import { updatedAfterParam } from '../../src/manifest/state.ts';
import type { ResourceState, SchoolDirective, SchoolState } from '../../src/manifest/types.ts';
import type { ResourceSpec } from '../../src/resources/types.ts';
import type { SchoolRef } from '../../src/pipeline/task.ts';

const SPECS = new Map(selectResources(undefined, []).map((s) => [s.name, s]));
const spec = (name: string): ResourceSpec => SPECS.get(name)!;

const school: SchoolRef = { id: 'A1001', region: 'uk', domain: 'api.sandbox.test', record: { id: 'A1001' } };
const NOW = new Date('2026-03-10T12:00:00.000Z');
const WATERMARK = '2026-03-10T06:00:00.000Z';

const settings = (o: Partial<PlanSettings> = {}): PlanSettings => ({
  fullRefresh: false,
  lookbackSeconds: 300,
  // Per resource: results snapshot daily, the other assessment tables weekly, resultsets never.
  snapshotEveryHours: (r) => (r === 'assessment_results' ? 24 : r === 'assessment_resultsets' ? 0 : 168),
  windows: 1,
  ...o,
});

const state = (resources: Record<string, ResourceState>): SchoolState => ({ version: 1, school_id: 'A1001', region: 'uk', resources });

/** Committed before: a watermark six hours old, a full snapshot two days old. */
const committed = (o: Partial<ResourceState> = {}): ResourceState => ({
  watermark: WATERMARK,
  last_run_id: '20260310T060000.000Z-aaaa',
  last_full_at: '2026-03-08T12:00:00.000Z',
  ...o,
});

const directive = (seq: number): SchoolDirective => ({
  version: 1,
  school_id: 'A1001',
  force_full_seq: seq,
  deactivated: null,
  updated_at: '2026-03-10T00:00:00.000Z',
});

const checkpoint = (o: Partial<NonNullable<ResourceState['checkpoint']>> = {}): NonNullable<ResourceState['checkpoint']> => ({
  snapshot: '20260310T060000.000Z-aaaa',
  seq: 2,
  walks: [{ next: '/v1.0/schools/A1001/achievements?cursor=c1.eyJrIjo5LCJwIjozfQ&per_page=5&include=students%2Cemployees' }],
  pages: 10,
  rows: 50,
  started_at: '2026-03-10T06:00:01.000Z',
  ...o,
});

function plan(
  name: string,
  resources: Record<string, ResourceState>,
  o: { directive?: SchoolDirective; settings?: Partial<PlanSettings>; scopeMasked?: string[] } = {},
) {
  return planTask(school, spec(name), state(resources), {
    directive: o.directive,
    settings: settings(o.settings),
    now: NOW,
    scopeMasked: o.scopeMasked ?? [],
  });
}

describe('planTask: full or incremental, and why', () => {
  it('first run: full, from nothing', () => {
    const p = plan('achievements', {});
    expect(p).toMatchObject({ mode: 'full', reason: 'first run', previousWatermark: null, scopeMasked: [] });
    expect(p.updatedAfter).toBeUndefined();
    expect(p.resume).toBeUndefined();
    expect(p.school).toBe(school);
    expect(p.spec).toBe(spec('achievements'));
    // Windows of a big school's full read come from the settings, whatever the mode.
    expect(plan('achievements', {}, { settings: { windows: 4 } }).windows).toBe(4);
    expect(plan('achievements', { achievements: committed() }, { settings: { windows: 4 } }).windows).toBe(4);
  });

  it('a resource with state but no watermark yet is a first run too', () => {
    expect(plan('achievements', { achievements: committed({ watermark: null }) })).toMatchObject({ mode: 'full', reason: 'first run' });
  });

  it('incremental: updated_after is the watermark minus the lookback, and the watermark may not fall back', () => {
    const p = plan('achievements', { achievements: committed() });
    expect(p).toMatchObject({
      mode: 'incremental',
      updatedAfter: updatedAfterParam(WATERMARK, 300),
      previousWatermark: WATERMARK,
      reason: `changes since the watermark ${WATERMARK}`,
    });
    expect(p.updatedAfter).toBe('2026-03-10 05:55:00');
    expect(plan('achievements', { achievements: committed() }, { settings: { lookbackSeconds: 0 } }).updatedAfter).toBe(
      '2026-03-10 06:00:00',
    );
  });

  it('resources without updated_after are always read in full, even with a watermark', () => {
    for (const name of ['school_meta', 'school_permissions', 'school_acl', 'achievement_attributes', 'schools']) {
      expect(plan(name, { [name]: committed() })).toMatchObject({ mode: 'full', reason: 'always read in full' });
    }
  });

  it('--full-refresh: full, starting the watermark afresh, keeping the id list for snapshot comparison', () => {
    const p = plan(
      'assessment_aspects',
      { assessment_aspects: committed({ known_ids_file: 'ids.json.gz' }) },
      { settings: { fullRefresh: true } },
    );
    expect(p).toMatchObject({ mode: 'full', reason: '--full-refresh', previousWatermark: null, knownIdsFile: 'ids.json.gz' });
  });

  it('a directive newer than what the resource applied forces a full read without the old id list', () => {
    const p = plan(
      'assessment_aspects',
      { assessment_aspects: committed({ known_ids_file: 'ids.json.gz', applied_force_full_seq: 1 }) },
      { directive: directive(2) },
    );
    expect(p).toMatchObject({ mode: 'full', reason: 'directive (approval or migration)', forceFullSeq: 2, previousWatermark: null });
    // Ids change on migration: comparing with the old list would report every row deleted.
    expect(p.knownIdsFile).toBeUndefined();
  });

  it('a directive already applied changes nothing but is carried along', () => {
    const p = plan('achievements', { achievements: committed({ applied_force_full_seq: 2 }) }, { directive: directive(2) });
    expect(p).toMatchObject({ mode: 'incremental', forceFullSeq: 2, previousWatermark: WATERMARK });
    const none = plan('achievements', { achievements: committed() }, { directive: directive(0) });
    expect(none.mode).toBe('incremental');
  });

  it('--full-refresh is named before a directive', () => {
    expect(plan('achievements', { achievements: committed() }, { directive: directive(1), settings: { fullRefresh: true } }).reason).toBe(
      '--full-refresh',
    );
  });
});

describe('planTask: personal-data policy', () => {
  it('rows written under another policy or key are read again in full, like after a migration', () => {
    const p = plan(
      'assessment_aspects',
      { assessment_aspects: committed({ personal_data: 'fp-old', known_ids_file: 'ids.json.gz', checkpoint: checkpoint() }) },
      { settings: { personalData: 'fp-new' } },
    );
    expect(p).toMatchObject({ mode: 'full', reason: 'personal-data policy or key changed', previousWatermark: null });
    expect(p.resume).toBeUndefined();
    expect(p.knownIdsFile).toBeUndefined();
    // From a policy to none at all, too.
    expect(plan('achievements', { achievements: committed({ personal_data: 'fp-old' }) }).reason).toBe(
      'personal-data policy or key changed',
    );
  });

  it("the same policy, or none recorded and 'keep', changes nothing", () => {
    expect(plan('achievements', { achievements: committed({ personal_data: 'fp' }) }, { settings: { personalData: 'fp' } }).mode).toBe(
      'incremental',
    );
    expect(plan('achievements', { achievements: committed() }, { settings: { personalData: 'keep' } }).mode).toBe('incremental');
    // A first run has nothing written under another policy.
    expect(plan('achievements', {}, { settings: { personalData: 'fp' } }).reason).toBe('first run');
  });
});

describe('planTask: snapshots of tables without deletion records, per resource', () => {
  // Last full snapshot two days ago: due for results (daily), not for aspects (weekly), never for resultsets.
  it('is due by each resource own interval', () => {
    const resources = {
      assessment_results: committed({ known_ids_file: 'r.json.gz' }),
      assessment_aspects: committed(),
      assessment_resultsets: committed(),
    };
    expect(plan('assessment_results', resources)).toMatchObject({ mode: 'full', reason: 'snapshot due', knownIdsFile: 'r.json.gz' });
    // A snapshot read keeps the committed watermark as its floor.
    expect(plan('assessment_results', resources).previousWatermark).toBe(WATERMARK);
    expect(plan('assessment_aspects', resources).mode).toBe('incremental');
    expect(plan('assessment_resultsets', resources).mode).toBe('incremental');
  });

  it('a weekly interval falls due after a week', () => {
    const old = committed({ last_full_at: '2026-03-03T12:00:00.000Z' });
    expect(plan('assessment_aspects', { assessment_aspects: old })).toMatchObject({ mode: 'full', reason: 'snapshot due' });
    expect(plan('assessment_resultsets', { assessment_resultsets: old }).mode).toBe('incremental');
  });

  it('a table without a full snapshot yet gets one, even with interval 0', () => {
    const noFull = committed({ last_full_at: null });
    expect(plan('assessment_resultsets', { assessment_resultsets: noFull })).toMatchObject({ mode: 'full', reason: 'snapshot due' });
  });

  it('tables with deletion records, and the deletions table itself, never need a snapshot', () => {
    const old = committed({ last_full_at: null });
    expect(plan('achievements', { achievements: old }).mode).toBe('incremental');
    expect(plan('deletions', { deletions: old }).mode).toBe('incremental');
  });
});

describe('planTask: scope', () => {
  const masked = committed({ scope_masked: ['achievements.comment', 'achievements.parents_notified'] });

  it('columns that were null for lack of scope and now are not: full ("scope widened")', () => {
    expect(plan('achievements', { achievements: masked }, { scopeMasked: ['achievements.comment'] })).toMatchObject({
      mode: 'full',
      reason: 'scope widened',
      scopeMasked: ['achievements.comment'],
      previousWatermark: WATERMARK,
    });
    expect(plan('achievements', { achievements: masked }).reason).toBe('scope widened');
  });

  it('still masked (or masked more): incremental', () => {
    const same = plan('achievements', { achievements: masked }, { scopeMasked: ['achievements.comment', 'achievements.parents_notified'] });
    expect(same.mode).toBe('incremental');
    expect(same.scopeMasked).toEqual(['achievements.comment', 'achievements.parents_notified']);
    expect(plan('achievements', { achievements: committed() }, { scopeMasked: ['achievements.comment'] }).mode).toBe('incremental');
  });
});

describe('planTask: resuming a read committed up to a checkpoint', () => {
  it('a full read resumes from its saved page', () => {
    const cp = checkpoint({ ids_files: ['a.json.gz'] });
    const p = plan('achievements', { achievements: { watermark: null, last_run_id: null, last_full_at: null, checkpoint: cp } });
    expect(p).toMatchObject({ mode: 'full', resume: cp, reason: 'resuming a full read committed up to page 10', previousWatermark: null });
    expect(p.updatedAfter).toBeUndefined();
  });

  it('an incremental read resumes with the window it began with, not a new one', () => {
    const cp = checkpoint({ updated_after: '2026-03-09 23:55:00' });
    const p = plan('achievements', { achievements: committed({ checkpoint: cp }) });
    expect(p).toMatchObject({
      mode: 'incremental',
      updatedAfter: '2026-03-09 23:55:00',
      resume: cp,
      previousWatermark: WATERMARK,
      reason: expect.stringMatching(/^resuming an? incremental read committed up to page 10$/),
    });
  });

  it('a resume takes precedence over a snapshot falling due and over --full-refresh for a full read', () => {
    const cp = checkpoint();
    expect(plan('assessment_results', { assessment_results: committed({ checkpoint: cp }) }).resume).toBe(cp);
    const refresh = plan('achievements', { achievements: committed({ checkpoint: cp }) }, { settings: { fullRefresh: true } });
    expect(refresh).toMatchObject({ mode: 'full', resume: cp, previousWatermark: null });
  });

  it('--full-refresh drops a resumable incremental read: the run reads in full from page 1', () => {
    const p = plan(
      'achievements',
      { achievements: committed({ checkpoint: checkpoint({ updated_after: '2026-03-09 23:55:00' }) }) },
      { settings: { fullRefresh: true } },
    );
    expect(p).toMatchObject({ mode: 'full', reason: '--full-refresh' });
    expect(p.resume).toBeUndefined();
    expect(p.updatedAfter).toBeUndefined();
  });

  it('a directive forcing a full read (ids changed) drops the resume', () => {
    const p = plan(
      'achievements',
      { achievements: committed({ applied_force_full_seq: 1, checkpoint: checkpoint() }) },
      { directive: directive(2) },
    );
    expect(p).toMatchObject({ mode: 'full', reason: 'directive (approval or migration)', forceFullSeq: 2, previousWatermark: null });
    expect(p.resume).toBeUndefined();
  });
});

describe('planTask: one shape for every plan', () => {
  // A run holds every task's plan until the task starts: plans of different shapes each took a
  // hidden class of their own (about half a plan's memory at thousands of schools).
  it('lists the same fields in the same order whatever the mode, resume, directive or content', () => {
    const plans = [
      plan('achievements', {}),
      plan('achievements', { achievements: committed() }),
      plan('achievements', { achievements: committed({ checkpoint: checkpoint() }) }),
      plan('achievements', { achievements: committed({ checkpoint: checkpoint({ updated_after: '2026-03-10 05:55:00' }) }) }),
      plan('achievements', { achievements: committed({ known_ids_file: '_state/ids/x.json' }) }, { directive: directive(2) }),
      plan('schools', { schools: committed({ content: { sha256: 'ab', run_id: 'r' } }) }),
      plan('achievements', { achievements: committed() }, { settings: { fullRefresh: true } }),
    ];
    expect(new Set(plans.map((p) => p.mode)).size).toBe(2);
    const keys = plans.map((p) => Object.keys(p).join(','));
    expect(new Set(keys)).toEqual(new Set([keys[0]]));
  });
});
