import { describe, expect, it } from 'vitest';
import { exitCodeFor } from '../../src/cli/commands.ts';
import { resolveRunConfig } from '../../src/config/resolve.ts';
import { ConfigError, ExportError } from '../../src/errors.ts';
import type { Manifest, ManifestTask, PersonalDataRecord } from '../../src/manifest/types.ts';
import { renderSummary, summarise } from '../../src/pipeline/summary.ts';
import { checkPolicyColumns, closest } from '../../src/privacy/columns.ts';
import { comparePolicies, describeDifference } from '../../src/privacy/compare.ts';
import { dataMapRows } from '../../src/privacy/datamap.ts';
import { builtinTables } from '../../src/privacy/docs.ts';
import { changedBy, CHANGED_BY_ENV, decide, refuseChangeSettings, type GuardInput } from '../../src/privacy/guard.ts';
import { KEEP_ALL, policyRecord, type PersonalDataPolicy } from '../../src/privacy/policy.ts';
import { fieldActions, policyMatches } from '../../src/privacy/report.ts';
import { policyStatusOf } from '../../src/privacy/status.ts';
import { runIdOfDataFile } from '../../src/privacy/tighten.ts';
import { purgesOf } from '../../src/warehouse/manifests.ts';

const TABLES = builtinTables();
const STRICT: PersonalDataRecord = { person_id: 'pseudonymise', direct_identifier: 'drop', free_text: 'drop', key_id: 'aaaaaaaaaaaaaaaa' };
const KEEP: PersonalDataRecord = { person_id: 'keep', direct_identifier: 'keep', free_text: 'keep' };
const policy = (p: Partial<PersonalDataPolicy>): PersonalDataPolicy => ({ ...KEEP_ALL, columns: {}, ...p });

function input(o: Partial<GuardInput> = {}): GuardInput {
  return {
    personalData: KEEP,
    format: 'parquet',
    tables: TABLES,
    accept: { personalDataChange: false, formatChange: false },
    runId: '20260102T000000.000Z-bbbb',
    now: new Date('2026-01-02T00:00:00Z'),
    by: 'ops@host',
    dest: './exports',
    ...o,
  };
}

/** The error a call throws, to look at its code, exit status and message. */
function thrown(f: () => unknown): ExportError {
  try {
    f();
  } catch (e) {
    if (e instanceof ExportError) return e;
    throw e;
  }
  throw new Error('expected an error');
}

describe('comparing personal-data policies', () => {
  it('names each class and override that is weaker or stricter, and another key', () => {
    const from: PersonalDataRecord = { ...STRICT, columns: { 'achievements.comment': 'drop', 'achievement_students.year_group': 'drop' } };
    const to: PersonalDataRecord = {
      person_id: 'pseudonymise',
      direct_identifier: 'pseudonymise',
      free_text: 'drop',
      columns: { 'assessment_results.result': 'keep' },
      key_id: 'bbbbbbbbbbbbbbbb',
    };
    expect(comparePolicies(from, to, TABLES).map(describeDifference)).toEqual([
      'direct_identifier drop -> pseudonymise (weaker)',
      // an override removed is compared with what the class now does to the column
      'columns.achievement_students.year_group drop -> keep (by its class none) (weaker)',
      'columns.assessment_results.result drop (by its class free_text) -> keep (weaker)',
      'key aaaaaaaaaaaaaaaa -> bbbbbbbbbbbbbbbb (another key: pseudonyms do not join)',
    ]);
    // achievements.comment: dropped by the override before, by free_text drop now: no difference
    expect(comparePolicies(KEEP, STRICT, TABLES).map((d) => d.kind)).toEqual(['stricter', 'stricter', 'stricter']);
    expect(comparePolicies(STRICT, STRICT, TABLES)).toEqual([]);
  });
});

describe('a destination keeps its policy and format (the decision)', () => {
  it('the first run records its policy and format', () => {
    const g = decide(undefined, input({ personalData: STRICT }));
    expect(g.changed).toBe(true);
    expect(g.record).toMatchObject({
      version: 1,
      format: 'parquet',
      personal_data: STRICT,
      since: { run_id: '20260102T000000.000Z-bbbb' },
    });
    expect(g.notes.join()).toMatch(/now keeps its personal data: person ids pseudonymised/);
  });

  it('refuses a weaker policy or another key (exit 2) naming each difference, and accepts them with --personal-data-change', () => {
    const kept = decide(undefined, input({ personalData: STRICT, runId: '20260101T000000.000Z-aaaa' })).record;
    const weaker = thrown(() => decide(kept, input()));
    expect([weaker.code, exitCodeFor(weaker)]).toEqual(['E_POLICY_CHANGE', 2]);
    expect(weaker.message).toBe(
      "this run's personal-data policy is weaker than the one ./exports keeps (recorded by run 20260101T000000.000Z-aaaa): person_id pseudonymise -> keep (weaker); direct_identifier drop -> keep (weaker); free_text drop -> keep (weaker). Run with the destination's policy (school-export datamap --dest shows it), or pass --personal-data-change to accept the change (recorded in the manifest)",
    );
    const rekeyed = thrown(() => decide(kept, input({ personalData: { ...STRICT, key_id: 'cccccccccccccccc' } })));
    expect(rekeyed.code).toBe('E_POLICY_CHANGE');
    expect(rekeyed.message).toContain('uses another pseudonymisation key than the one ./exports keeps');
    expect(rekeyed.message).toContain('key aaaaaaaaaaaaaaaa -> cccccccccccccccc');

    const accepted = decide(kept, input({ accept: { personalDataChange: true, formatChange: false } }));
    expect(accepted.change).toMatchObject({ kind: 'accepted', by: 'ops@host', from: STRICT });
    expect(accepted.change!.differences).toHaveLength(3);
    expect(accepted.tightened).toBe(false);
    expect(accepted.record).toMatchObject({ personal_data: KEEP, fingerprint: 'keep', since: { by: 'ops@host' } });
    expect(accepted.record.earlier).toEqual([
      { fingerprint: kept.fingerprint, personal_data: STRICT, until_run: '20260102T000000.000Z-bbbb' },
    ]);
  });

  it('accepts and announces a stricter policy; the same policy changes nothing', () => {
    const kept = decide(undefined, input()).record;
    const stricter = decide(kept, input({ personalData: STRICT }));
    expect(stricter.change).toMatchObject({ kind: 'stricter', from: KEEP });
    expect(stricter.tightened).toBe(true);
    expect(stricter.notes.join()).toMatch(/stricter than the destination's .* files written under the weaker policy are deleted/);
    const same = decide(stricter.record, input({ personalData: STRICT }));
    expect([same.changed, same.notes, same.change]).toEqual([false, [], undefined]);
  });

  it('refuses another format (exit 2) unless --format-change, which the manifest records', () => {
    const kept = decide(undefined, input({ format: 'ndjson' })).record;
    const e = thrown(() => decide(kept, input()));
    expect([e.code, exitCodeFor(e)]).toEqual(['E_FORMAT_CHANGE', 2]);
    expect(e.message).toMatch(
      /^\.\/exports holds ndjson files \(since run .*\); this run would write parquet: pass --format ndjson, or --format-change/,
    );
    const ok = decide(kept, input({ accept: { personalDataChange: false, formatChange: true } }));
    expect(ok.formatChange).toEqual({ from: 'ndjson', to: 'parquet', by: 'ops@host', at: '2026-01-02T00:00:00.000Z' });
    expect(ok.record.format).toBe('parquet');
  });

  it('accepting a change is a flag: the environment variables are refused, the pipeline file key is unknown', () => {
    for (const name of ['SCHOOL_EXPORT_PERSONAL_DATA_CHANGE', 'SCHOOL_EXPORT_FORMAT_CHANGE']) {
      const e = thrown(() => refuseChangeSettings({ [name]: 'true' }));
      expect(e).toBeInstanceOf(ConfigError);
      expect(e.message).toMatch(new RegExp(`^${name}: accepting a change is the flag --(personal-data|format)-change of one command line`));
      expect(() => resolveRunConfig(undefined, { api_url: 'https://api.example.com' }, { [name]: '1' })).toThrow(/never a setting/);
    }
    expect(changedBy({ [CHANGED_BY_ENV]: ' ticket 42\n' })).toBe('ticket 42');
    expect(changedBy({})).toMatch(/^.+@.+$/);
  });
});

describe('every column a policy names exists', () => {
  it('a misspelt column is refused with the closest known names; declared, recognised and seen names are accepted', () => {
    const e = thrown(() => checkPolicyColumns({ 'achievements.commnt': 'drop' }, TABLES));
    expect([e.code, exitCodeFor(e)]).toEqual(['E_CONFIG', 2]);
    expect(e.message).toBe(
      'personal_data.columns.achievements.commnt: achievements has no column "commnt": it is not declared, no name rule recognises it and no run of this destination saw it; did you mean achievements.comment?',
    );
    expect(() => checkPolicyColumns({ 'achievement_students.gender': 'keep' }, TABLES)).toThrow(/no column "gender"/);
    // seen by a run of the destination: accepted
    checkPolicyColumns({ 'achievement_students.gender': 'keep' }, TABLES, { achievement_students: ['gender'] });
    checkPolicyColumns(
      {
        'achievements.comment': 'drop', // declared
        'achievements.comment__raw': 'drop', // its companion
        'achievement_students.year_group': 'drop', // a name rule says it holds nothing personal
        'achievement_students.date_of_birth__timezone': 'drop', // a companion of a recognised name
        'achievements.location__description': 'drop', // free text by name
      },
      TABLES,
    );
    expect(closest('achievement.comment', ['achievements.comment', 'achievements.points'])).toEqual(['achievements.comment']);
    // the table itself: did you mean, at configuration time
    expect(() =>
      resolveRunConfig(undefined, { api_url: 'https://x.example', personal_data: { columns: { 'achievment.comment': 'drop' } } }),
    ).toThrow(/no table "achievment" in this run \(did you mean achievements\.comment\? known:/);
  });
});

describe("what a run's policy matched, and what it did to undeclared fields", () => {
  const task = (o: Partial<ManifestTask>): ManifestTask => ({
    school_id: 'A1',
    region: 'uk',
    resource: 'achievements',
    status: 'committed',
    mode: 'full',
    files: [],
    rows: {},
    ...o,
  });
  const p = policy({
    person_id: 'pseudonymise',
    free_text: 'drop',
    columns: { 'achievement_students.year_group': 'drop', 'achievements.commnt_text': 'keep' },
  });

  it('lists each entry with the columns it decided in the rows written, an override that matched nothing with none', () => {
    const m = policyMatches(
      [
        task({
          rows: { achievements: 3, achievement_students: 2 },
          drift_fields: { achievement_students: ['mis_id', 'year_group', 'gender', 'forename'] },
        }),
        task({ resource: 'assessment_results', status: 'failed', rows: { assessment_results: 9 } }),
      ],
      TABLES,
      p,
    );
    expect(m.classes.free_text).toEqual(['achievements.comment']); // assessment_results failed: not written
    expect(m.classes.person_id).toEqual(['achievement_students.id', 'achievement_students.mis_id']);
    expect(m.classes.direct_identifier).toEqual(['achievement_students.forename']);
    expect(m.classes.unsure).toEqual(['achievement_students.gender']);
    expect(m.columns).toEqual({ 'achievement_students.year_group': ['achievement_students.year_group'], 'achievements.commnt_text': [] });
  });

  it('include fields are reported apart from drift, each with what the policy did to it', () => {
    const drift = { achievement_students: ['forename', 'mis_id', 'year_group', 'gender'], achievements: ['house', 'notes'] };
    const actions = fieldActions(drift, TABLES, p);
    expect(actions).toEqual({
      // gender: no rule names it, so the strictest action the policy gives any class (free_text drop)
      achievement_students: { forename: 'kept', mis_id: 'pseudonymised', year_group: 'dropped', gender: 'dropped' },
      achievements: { house: 'kept', notes: 'dropped' },
    });
    const manifest: Manifest = {
      version: 1,
      run_id: 'r',
      started_at: '2026-01-01T00:00:00Z',
      finished_at: '2026-01-01T00:00:01Z',
      format: 'parquet',
      status: 'ok',
      tasks: [task({ rows: { achievements: 1 }, drift_fields: drift })],
      deletions: [],
    };
    const base = { deactivated: [], scopeMasked: {}, durationMs: 1000, dest: 'file:///x', requests: 1, notes: [], failRun: false };
    const s = summarise(manifest, { ...base, includeTables: ['achievement_students', 'achievement_employees'], fieldActions: actions });
    expect(s.drift).toEqual({ achievements: ['house', 'notes'] });
    expect(s.includeFields).toEqual({ achievement_students: ['forename', 'gender', 'mis_id', 'year_group'] });
    const text = renderSummary(s);
    expect(text).toContain(
      '  fields of included people in achievement_students (not in the API contract; classified by name): dropped gender, year_group; pseudonymised mis_id; kept forename',
    );
    expect(text).toContain('  schema drift in achievements: 2 undeclared field(s) seen: dropped notes; kept house');
    expect(text).not.toContain('schema drift in achievement_students');
  });
});

describe('the data map', () => {
  it('every column with its class, where it comes from and the action; undeclared fields a run saw', () => {
    const rows = dataMapRows(TABLES, policy({ person_id: 'pseudonymise', direct_identifier: 'drop', free_text: 'drop' }), {
      achievement_students: ['forename', 'gender', 'date_of_birth__timezone', 'year_group'],
    });
    const of = (t: string, c: string) => rows.find((r) => r.table === t && r.column === c);
    expect(of('achievements', 'comment')).toMatchObject({ class: 'free_text', source: 'declaration', action: 'drop', declared: true });
    expect(of('achievements', 'points')).toMatchObject({ class: 'none', source: 'declaration', action: 'keep' });
    expect(of('achievements', '_school_id')).toMatchObject({ class: 'none', source: 'metadata' });
    expect(of('deletions', 'id')).toMatchObject({ class: 'person_id', when: { column: 'type' }, action: 'pseudonymise' });
    expect(of('achievement_students', 'forename')).toMatchObject({
      class: 'direct_identifier',
      source: 'name rule',
      action: 'drop',
      declared: false,
      seen: true,
    });
    expect(of('achievement_students', 'gender')).toMatchObject({ class: 'unsure', source: 'strictest default', action: 'drop' });
    expect(of('achievement_students', 'date_of_birth__timezone')).toMatchObject({
      class: 'direct_identifier',
      source: 'name rule of date_of_birth',
    });
    expect(of('achievement_students', 'year_group')).toMatchObject({ class: 'none', source: 'name rule', action: 'keep' });
    // every declared column of every table is there
    for (const t of TABLES) for (const c of t.columns) expect(of(t.name, c.name), `${t.name}.${c.name}`).toBeDefined();
  });
});

describe('status and loaders', () => {
  it('status counts the schools still holding data of a weaker policy', () => {
    const record = decide(decide(undefined, input()).record, input({ personalData: STRICT })).record;
    const fp = record.fingerprint;
    const r = (o: object) => ({ watermark: null, last_run_id: 'x', last_full_at: null, ...o });
    const st = policyStatusOf(record, [
      { version: 1, school_id: 'A1', region: 'uk', resources: { a: r({ personal_data: fp }), b: r({}) } }, // b not read again
      { version: 1, school_id: 'A2', region: 'uk', resources: { a: r({ personal_data: fp, purge_before: 'x' }) } }, // waiting for the purge
      { version: 1, school_id: 'A3', region: 'uk', resources: { a: r({ personal_data: fp }) } },
    ]);
    expect(st).toMatchObject({ weaker_schools: ['A1', 'A2'], weaker_resources: 1, awaiting_purge: 1, policy: STRICT });
  });

  it('a purge with before_run is applied at that run; an unsafe one is refused', () => {
    const m = (before: unknown): Manifest =>
      ({
        version: 1,
        run_id: '20260103T000000.000Z-purge-cccc',
        started_at: '',
        finished_at: '',
        format: 'parquet',
        status: 'ok',
        tasks: [],
        deletions: [],
        purged: [{ school_id: 'A1001', region: 'uk', reason: 'r', files_removed: 1, before_run: before }],
      }) as Manifest;
    const purges = (x: Manifest) => purgesOf(x.run_id, x.purged ?? []);
    expect(purges(m('20260102T000000.000Z-bbbb'))).toEqual([{ runId: '20260102T000000.000Z-bbbb', schoolId: 'A1001' }]);
    expect(purges(m(undefined))[0]!.runId).toBe('20260103T000000.000Z-purge-cccc');
    expect(() => purges(m("x' OR 1=1 --"))).toThrow(/unsafe before_run/);
    expect(runIdOfDataFile('achievements/region=uk/school_id=A1/20260102T000000.000Z-bbbb-s1of2-0001.ndjson.gz')).toBe(
      '20260102T000000.000Z-bbbb-s1of2',
    );
    expect(policyRecord(KEEP_ALL)).toEqual(KEEP);
  });
});
