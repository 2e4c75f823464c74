import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { resolveRunConfig } from '../../src/config/resolve.ts';
import type { PipelineConfig } from '../../src/config/schema.ts';
import { flagsToPipeline } from '../../src/cli/run.ts';
import { ConfigError } from '../../src/errors.ts';
import { KEY_FILE_ENV } from '../../src/privacy/config.ts';
import { createPersonalData } from '../../src/privacy/personal-data.ts';
import { scratch } from '../helpers/scratch.ts';

const dir = scratch('pd-cfg-').root;
const write = (name: string, content: string | Buffer) => {
  const p = join(dir, name);
  writeFileSync(p, content);
  return p;
};
const KEY = write('key', 'k'.repeat(40) + '\n');
const API = { api_url: 'https://api.example.com' };
const pipeline = (obj: unknown) => write(`p-${Math.random().toString(36).slice(2)}.json`, JSON.stringify({ ...API, ...(obj as object) }));
const resolve = (file: unknown, flags: PipelineConfig = {}) => resolveRunConfig(pipeline(file), flags);

describe('personal_data settings', () => {
  it('default to keeping everything, with no key needed', () => {
    const cfg = resolve({});
    expect(cfg.personalData).toEqual({ policy: { person_id: 'keep', direct_identifier: 'keep', free_text: 'keep', columns: {} } });
    expect(createPersonalData(cfg.personalData.policy).record).toEqual({ person_id: 'keep', direct_identifier: 'keep', free_text: 'keep' });
  });

  it('come from the pipeline file, and flags win class by class and column by column', () => {
    const cfg = resolve(
      {
        personal_data: {
          person_id: 'pseudonymise',
          free_text: 'drop',
          columns: { 'achievements.comment': 'keep', 'assessment_results.result': 'drop' },
        },
        pseudonymise_key_file: KEY,
      },
      flagsToPipeline({
        'free-text': 'keep',
        'direct-identifier': 'drop',
        'personal-column': ['achievements.comment=drop'],
      } as Parameters<typeof flagsToPipeline>[0]),
    );
    expect(cfg.personalData.policy).toEqual({
      person_id: 'pseudonymise',
      direct_identifier: 'drop',
      free_text: 'keep',
      columns: { 'achievements.comment': 'drop', 'assessment_results.result': 'drop' },
    });
    const pd = createPersonalData(cfg.personalData.policy, cfg.personalData.key);
    expect(pd.record.key_id).toMatch(/^[0-9a-f]{16}$/);
    expect(JSON.stringify(cfg)).not.toContain('k'.repeat(32)); // the config can be printed: the key never shows
  });

  it('read the key file from the environment when no flag or file key names one, and ignore a trailing newline', () => {
    vi.stubEnv(KEY_FILE_ENV, KEY);
    try {
      const a = resolve({ personal_data: { person_id: 'pseudonymise' } }).personalData.key!;
      const b = resolve({ personal_data: { person_id: 'pseudonymise' }, pseudonymise_key_file: write('key2', 'k'.repeat(40)) }).personalData
        .key!;
      expect(a.id).toBe(b.id);
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it('refuse, in one line naming the setting, what cannot be applied', () => {
    vi.stubEnv(KEY_FILE_ENV, '');
    const cases: [unknown, PipelineConfig, RegExp][] = [
      [{ personal_data: { person_id: 'drop' } }, {}, /personal_data\.person_id: expected one of keep, pseudonymise, got "drop"/],
      [{ personal_data: { free_text: 'pseudonymise' } }, {}, /personal_data\.free_text: expected one of keep, drop/],
      [
        { personal_data: { names: 'drop' } },
        {},
        /personal_data\.names: unknown setting \(known: person_id, direct_identifier, free_text, columns\)/,
      ],
      [
        { personal_data: { columns: { 'achievements.comment': 'hide' } } },
        {},
        /personal_data\.columns\.achievements\.comment: expected one of keep, pseudonymise, drop/,
      ],
      [{ personal_data: { columns: { comment: 'drop' } } }, {}, /personal_data\.columns\.comment: write the column as TABLE\.COLUMN/],
      [
        { personal_data: { columns: { 'achievment.comment': 'drop' } } },
        {},
        /personal_data\.columns\.achievment\.comment: no table "achievment" in this run/,
      ],
      [
        { personal_data: { columns: { 'achievements.points': 'pseudonymise' } }, pseudonymise_key_file: KEY },
        {},
        /achievements\.points holds integer values and cannot hold a pseudonym; use drop/,
      ],
      [
        { personal_data: { columns: { 'achievement_students.id': 'drop' } } },
        {},
        /achievement_students\.id: id is part of the key of achievement_students/,
      ],
      [{ personal_data: { columns: { 'achievements._school_id': 'drop' } } }, {}, /_school_id is a metadata column/],
      [
        { personal_data: { person_id: 'pseudonymise' } },
        {},
        /personal_data\.person_id: pseudonymise needs a secret key: pass --pseudonymise-key-file PATH/,
      ],
      [
        { personal_data: { columns: { 'achievements.comment': 'pseudonymise' } } },
        {},
        /personal_data\.columns\.achievements\.comment: pseudonymise needs a secret key/,
      ],
      [
        { personal_data: { person_id: 'pseudonymise' }, pseudonymise_key_file: join(dir, 'missing') },
        {},
        /--pseudonymise-key-file .*missing: cannot read it \(ENOENT\)/,
      ],
      [
        { personal_data: { person_id: 'pseudonymise' }, pseudonymise_key_file: write('short', 'abc\n') },
        {},
        /holds 3 bytes; a key needs at least 32 random bytes/,
      ],
      [{ pseudonymise_key_file: 42 }, {}, /pseudonymise_key_file: expected a non-empty string/],
    ];
    try {
      for (const [file, flags, message] of cases) {
        let err: unknown;
        try {
          resolve(file, flags);
        } catch (e) {
          err = e;
        }
        expect(err, String(message)).toBeInstanceOf(ConfigError);
        expect((err as Error).message).toMatch(message);
        expect((err as Error).message).not.toContain('\n');
      }
      expect(() => flagsToPipeline({ 'personal-column': ['achievements.comment'] } as Parameters<typeof flagsToPipeline>[0])).toThrow(
        /--personal-column achievements\.comment: expected TABLE\.COLUMN=keep\|pseudonymise\|drop/,
      );
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it('accept overrides on the tables of custom resources and on undeclared columns', () => {
    const cfg = resolve({
      custom_resources: [{ name: 'students', path: '/schools/{school_id}/students', include: ['contacts'] }],
      personal_data: { columns: { 'students.forename': 'drop', 'student_contacts.relationship': 'keep' } },
    });
    expect(cfg.personalData.policy.columns).toEqual({ 'students.forename': 'drop', 'student_contacts.relationship': 'keep' });
  });
});
