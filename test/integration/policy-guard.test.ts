import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { exitCodeFor } from '../../src/cli/commands.ts';
import { dataMapCommandRun } from '../../src/cli/datamap.ts';
import type { PipelineConfig } from '../../src/config/schema.ts';
import { ExportError } from '../../src/errors.ts';
import type { Manifest } from '../../src/manifest/types.ts';
import { planExport } from '../../src/pipeline/dry-run.ts';
import { runExport } from '../../src/pipeline/run.ts';
import { DESTINATION_RECORD, type DestinationRecord } from '../../src/privacy/destination.ts';
import { CHANGED_BY_ENV } from '../../src/privacy/guard.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { runChild } from './child-run.ts';
import { sandboxConfig, tempDir } from './helpers.ts';
import { readRunManifest } from '../helpers/read-exports.ts';

/**
 * Issue 22: a personal-data policy that cannot lapse silently. Each refusal is exit status 2 with
 * one line naming what differs, before any request and before any file is written or changed.
 */
const KEY_A = 'policy guard key A: 0123456789abcdefghijklmnopqrstuvwxyz';
const KEY_B = 'policy guard key B: 0123456789abcdefghijklmnopqrstuvwxyz';
const STRICT: PipelineConfig['personal_data'] = { person_id: 'pseudonymise', direct_identifier: 'drop', free_text: 'drop' };

/** Every file under dir with a hash of its bytes: what "nothing was written" is checked against. */
function filesOf(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (!existsSync(dir)) return out;
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out[relative(dir, p)] = createHash('sha256').update(readFileSync(p)).digest('hex') + ` ${statSync(p).mtimeMs}`;
    }
  };
  walk(dir);
  return out;
}

describe('a destination keeps its personal-data policy and its format', () => {
  let sb: Sandbox;
  const tmp = tempDir('policy-guard-');
  const keyA = join(tmp.dir, 'key-a');
  const keyB = join(tmp.dir, 'key-b');

  beforeAll(async () => {
    writeFileSync(keyA, KEY_A);
    writeFileSync(keyB, KEY_B);
    sb = await startSandbox({ seed: 41, schools: 2, achievementsPerSchool: 30 });
  });
  afterAll(async () => {
    vi.unstubAllEnvs();
    await sb?.close();
    tmp.cleanup();
  });

  const run = (dest: string, extra: PipelineConfig = {}, accept: { personalDataChange?: boolean; formatChange?: boolean } = {}) =>
    runExport({ ...sandboxConfig(sb, dest, { format: 'ndjson', ...extra }), ...accept }, { token: sb.tokens.full });

  /** The run is refused: its error, after checking exit 2, no request and no file written or changed. */
  async function refused(dest: string, extra: PipelineConfig, accept: { personalDataChange?: boolean; formatChange?: boolean } = {}) {
    const before = filesOf(dest);
    sb.control.clearRequests();
    const e = await run(dest, extra, accept).then(
      () => undefined,
      (x: unknown) => x,
    );
    expect(e).toBeInstanceOf(ExportError);
    expect(exitCodeFor(e)).toBe(2);
    expect(sb.control.requests()).toEqual([]);
    expect(filesOf(dest)).toEqual(before);
    // the dry run says the same, reading nothing either
    const dry = await planExport({ ...sandboxConfig(sb, dest, { format: 'ndjson', ...extra }), ...accept }, { token: sb.tokens.full }).then(
      () => undefined,
      (x: unknown) => x,
    );
    expect((dry as ExportError).message).toBe((e as ExportError).message);
    expect(sb.control.requests()).toEqual([]);
    return e as ExportError;
  }

  it('a misspelt column stops the run before any request or file, naming the closest column', async () => {
    const dest = join(tmp.dir, 'misspelt');
    const e = await refused(dest, { personal_data: { columns: { 'achievements.commnt': 'drop' } } });
    expect(e.code).toBe('E_CONFIG');
    expect(e.message).toMatch(
      /^personal_data\.columns\.achievements\.commnt: achievements has no column "commnt".*; did you mean achievements\.comment\?$/,
    );
    expect(existsSync(dest)).toBe(false); // not even created

    // written correctly, the run drops every comment, and says which columns each entry decided
    const ok = await run(dest, {
      personal_data: { columns: { 'achievements.comment': 'drop', 'achievements.location__description': 'drop' } },
    });
    expect(ok.status).toBe('ok');
    const manifest = readRunManifest(dest, ok.runId) as Manifest;
    expect(manifest.personal_data?.matched?.columns).toEqual({
      'achievements.comment': ['achievements.comment'],
      'achievements.location__description': [], // a recognised name the service did not send
    });
    expect(ok.personalData?.matched).toEqual(manifest.personal_data?.matched);
    const comments = readdirSync(join(dest, 'achievements/region=uk/school_id=A1001')).flatMap((f) =>
      readFileSync(join(dest, 'achievements/region=uk/school_id=A1001', f), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => (JSON.parse(l) as { comment: unknown }).comment),
    );
    expect(comments.length).toBe(30);
    expect(comments.every((c) => c === null)).toBe(true);
  });

  it('a weaker second run, or one with another key, stops naming each difference; --personal-data-change accepts it and the manifest says who', async () => {
    const dest = join(tmp.dir, 'weaker');
    const strict = { personal_data: STRICT, pseudonymise_key_file: keyA };
    const first = await run(dest, strict);
    expect(first.status).toBe('ok');
    const record = JSON.parse(readFileSync(join(dest, DESTINATION_RECORD), 'utf8')) as DestinationRecord;
    expect(record).toMatchObject({ format: 'ndjson', personal_data: { ...STRICT, key_id: expect.stringMatching(/^[0-9a-f]{16}$/) } });
    expect(JSON.stringify(record)).not.toContain(KEY_A.slice(0, 20));

    const plain = await refused(dest, {});
    expect(plain.code).toBe('E_POLICY_CHANGE');
    expect(plain.message).toContain(`is weaker than the one ${dest} keeps (recorded by run ${first.runId})`);
    for (const d of [
      'person_id pseudonymise -> keep (weaker)',
      'direct_identifier drop -> keep (weaker)',
      'free_text drop -> keep (weaker)',
    ])
      expect(plain.message).toContain(d);
    const partly = await refused(dest, {
      personal_data: { ...STRICT, columns: { 'achievements.comment': 'keep' } },
      pseudonymise_key_file: keyA,
    });
    expect(partly.message).toContain('columns.achievements.comment drop (by its class free_text) -> keep (weaker)');

    const rekeyed = await refused(dest, { ...strict, pseudonymise_key_file: keyB });
    expect(rekeyed.code).toBe('E_POLICY_CHANGE');
    expect(rekeyed.message).toMatch(
      /uses another pseudonymisation key than the one .* key [0-9a-f]{16} -> [0-9a-f]{16} \(another key: pseudonyms do not join\)/,
    );

    vi.stubEnv(CHANGED_BY_ENV, 'dpo@school-trust (ticket 77)');
    const accepted = await run(dest, {}, { personalDataChange: true });
    vi.unstubAllEnvs();
    expect(accepted.status).toBe('ok');
    const m = readRunManifest(dest, accepted.runId) as Manifest;
    expect(m.personal_data?.change).toMatchObject({
      kind: 'accepted',
      by: 'dpo@school-trust (ticket 77)',
      from: { ...STRICT, key_id: record.personal_data.key_id },
      differences: [
        'person_id pseudonymise -> keep (weaker)',
        'direct_identifier drop -> keep (weaker)',
        'free_text drop -> keep (weaker)',
      ],
    });
    expect(accepted.notes.join('\n')).toMatch(/personal-data policy changed with --personal-data-change by dpo@school-trust \(ticket 77\)/);
    // a relaxed policy deletes nothing: what was written before is stricter
    expect(readdirSync(join(dest, 'achievements/region=uk/school_id=A1001')).some((f) => f.startsWith(first.runId))).toBe(true);
    // the destination now keeps the new policy: a plain run goes through
    expect((await run(dest)).status).toBe('ok');
  });

  it('a destination written before records existed keeps the policy of its latest run', async () => {
    const dest = join(tmp.dir, 'legacy');
    const first = await run(dest, { personal_data: STRICT, pseudonymise_key_file: keyA });
    rmSync(join(dest, DESTINATION_RECORD)); // as an older version left it
    const e = await refused(dest, {});
    expect(e.code).toBe('E_POLICY_CHANGE');
    expect(e.message).toContain(`(recorded by run ${first.runId}): person_id pseudonymise -> keep (weaker)`);
    expect(existsSync(join(dest, DESTINATION_RECORD))).toBe(false);
    expect((await run(dest, { personal_data: STRICT, pseudonymise_key_file: keyA })).status).toBe('ok');
    const record = JSON.parse(readFileSync(join(dest, DESTINATION_RECORD), 'utf8')) as DestinationRecord;
    expect(record).toMatchObject({ format: 'ndjson', since: { run_id: first.runId } });
    expect(record).not.toHaveProperty('inferred_from');
    expect(record.fields_seen?.achievement_students).toEqual(expect.arrayContaining(['forename', 'surname', 'upn']));
  });

  it('a stricter policy is accepted and announced, by the dry run too', async () => {
    const dest = join(tmp.dir, 'stricter');
    await run(dest);
    const cfg = sandboxConfig(sb, dest, { format: 'ndjson', personal_data: { free_text: 'drop' } });
    const plan = await planExport(cfg, { token: sb.tokens.full });
    expect(plan.writes).toContain(DESTINATION_RECORD);
    expect(plan.notes.join('\n')).toMatch(
      /^personal-data policy stricter than the destination's \(since run .*\): free_text keep -> drop \(stricter\)/,
    );
    const s = await run(dest, { personal_data: { free_text: 'drop' } });
    expect(s.status).toBe('ok');
    expect(s.notes[0]).toMatch(/stricter than the destination's/);
    expect(s.personalData?.change).toMatchObject({ kind: 'stricter', differences: ['free_text keep -> drop (stricter)'] });
  });

  it('another format stops the run unless --format-change, which the manifest records', async () => {
    const dest = join(tmp.dir, 'format');
    const first = await run(dest);
    const e = await refused(dest, { format: 'parquet' });
    expect(e.code).toBe('E_FORMAT_CHANGE');
    expect(e.message).toBe(
      `${dest} holds ndjson files (since run ${first.runId}); this run would write parquet: pass --format ndjson, or --format-change to write parquet from now on (the DuckDB loader reads both; the BigQuery and Snowflake scripts read Parquet only)`,
    );
    const changed = await run(dest, { format: 'parquet' }, { formatChange: true });
    expect(changed.status).toBe('ok');
    const m = readRunManifest(dest, changed.runId) as Manifest;
    expect(m.format_change).toMatchObject({ from: 'ndjson', to: 'parquet' });
    expect((JSON.parse(readFileSync(join(dest, DESTINATION_RECORD), 'utf8')) as DestinationRecord).format).toBe('parquet');
  });

  it('datamap --dest shows the policy the destination keeps and the undeclared fields its runs saw', async () => {
    const dest = join(tmp.dir, 'datamap');
    await run(dest, { personal_data: STRICT, pseudonymise_key_file: keyA });
    let out = '';
    const io = { out: { write: (s: string) => ((out += s), true) } as unknown as NodeJS.WritableStream, err: process.stderr };
    await dataMapCommandRun({ dest, json: true }, io);
    const lines = out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines[0]).toMatchObject({ type: 'policy', ...STRICT, key_id: expect.stringMatching(/^[0-9a-f]{16}$/), format: 'ndjson' });
    const of = (t: string, c: string) => lines.find((l) => l.table === t && l.column === c);
    expect(of('achievement_students', 'surname')).toMatchObject({
      class: 'direct_identifier',
      source: 'name rule',
      action: 'drop',
      seen: true,
    });
    expect(of('achievement_students', 'mis_id')).toMatchObject({ class: 'person_id', action: 'pseudonymise', seen: true });
    expect(of('achievements', 'comment')).toMatchObject({ class: 'free_text', source: 'declaration', action: 'drop' });
    // a misspelt override is refused there too
    await expect(dataMapCommandRun({ dest, json: true, 'personal-column': ['achievements.commnt=drop'] }, io)).rejects.toThrow(
      /did you mean achievements\.comment\?/,
    );
  });

  it('from the command line: exit 2 and one line; the flag accepts, the environment cannot', async () => {
    const dest = join(tmp.dir, 'cli');
    const first = await runChild(sb, ['--dest', dest, '--format', 'ndjson', '--free-text', 'drop']).done;
    expect(first.code).toBe(0);
    sb.control.clearRequests();
    const weaker = await runChild(sb, ['--dest', dest, '--format', 'ndjson']).done;
    expect(weaker.code).toBe(2);
    expect(weaker.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(
        /^school-export: this run's personal-data policy is weaker .*: free_text drop -> keep \(weaker\)\. .*--personal-data-change/,
      ),
    ]);
    const viaEnv = await runChild(sb, ['--dest', dest, '--format', 'ndjson'], { SCHOOL_EXPORT_PERSONAL_DATA_CHANGE: 'true' }).done;
    expect([viaEnv.code, viaEnv.stderr.trim()]).toEqual([
      2,
      'school-export: SCHOOL_EXPORT_PERSONAL_DATA_CHANGE: accepting a change is the flag --personal-data-change of one command line, never a setting; unset it',
    ]);
    expect(sb.control.requests()).toEqual([]);
    const accepted = await runChild(sb, ['--dest', dest, '--format', 'ndjson', '--personal-data-change', '--json']).done;
    expect(accepted.code).toBe(0);
    expect((JSON.parse(accepted.stdout) as { personalData: { change: { kind: string } } }).personalData.change.kind).toBe('accepted');
  });
});
