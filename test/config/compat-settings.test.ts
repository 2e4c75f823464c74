import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { flagsToPipeline, typedFlags } from '../../src/cli/run.ts';
import { resolveRunConfig } from '../../src/config/resolve.ts';
import { ConfigError } from '../../src/errors.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { scratch } from '../helpers/scratch.ts';

const tmp = scratch('cfg-');

/** Issue 20's settings: property_scopes and lock, in the file, the environment and flags. */
const API = { api_url: 'https://api.example.com' };
const file = (name: string, body: unknown) => {
  const p = join(tmp.sub(), name);
  writeFileSync(p, JSON.stringify(body));
  return p;
};
const flags = (o: Record<string, unknown>) => resolveRunConfig(undefined, flagsToPipeline(o as never), {}, typedFlags(o as never));

describe('property_scopes', () => {
  const mapping = { 'achievements.comment': 'achievement_comment.read', 'achievements.parents_notified': 'ach_note_4.read' };

  it('comes from the file, SCHOOL_EXPORT_PROPERTY_SCOPES (JSON or pairs) or --property-scopes, flags winning', () => {
    expect(resolveRunConfig(file('p.json', { ...API, property_scopes: mapping }), {}, {}).propertyScopes).toEqual(mapping);
    expect(resolveRunConfig(undefined, API, { SCHOOL_EXPORT_PROPERTY_SCOPES: JSON.stringify(mapping) }).propertyScopes).toEqual(mapping);
    const pairs = 'achievements.comment=achievement_comment.read,achievements.parents_notified=ach_note_4.read';
    expect(resolveRunConfig(undefined, API, { SCHOOL_EXPORT_PROPERTY_SCOPES: pairs }).propertyScopes).toEqual(mapping);
    const cfg = flags({
      'api-url': API.api_url,
      'property-scopes': ['achievements.comment=x_c.read', 'achievements.parents_notified=x_p.read'],
    });
    expect(cfg.propertyScopes).toEqual({ 'achievements.comment': 'x_c.read', 'achievements.parents_notified': 'x_p.read' });
    expect(resolveRunConfig(undefined, API, {}).propertyScopes).toEqual({});
  });

  it.each([
    [{ 'achievements comment': 'a.read' }, /^p\.json: property_scopes\.achievements comment: expected a key TABLE\.COLUMN/],
    [
      { 'achievements.comment': 'nodot' },
      /^p\.json: property_scopes\.achievements\.comment: expected a permission identity <resource>\.<action>/,
    ],
    [{ 'achievements.comment': 'a b.read' }, /^p\.json: property_scopes\.achievements\.comment: expected a permission identity/],
    [{ 'achievments.comment': 'a.read' }, /p\.json: property_scopes\.achievments\.comment: no such table/],
    [{ 'achievements.coment': 'a.read' }, /p\.json: property_scopes\.achievements\.coment: achievements has no column coment/],
  ])('a malformed %j in a file names the key', (bad, message) => {
    let err: unknown;
    try {
      resolveRunConfig(file('p.json', { ...API, property_scopes: bad }), {}, {});
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message.replace(/^pipeline file .*?p\.json/, 'p.json')).toMatch(message);
  });

  it('a malformed flag or variable names it', () => {
    expect(() => flags({ 'api-url': API.api_url, 'property-scopes': ['achievements.comment'] })).toThrow(
      /^--property-scopes achievements\.comment: expected TABLE\.COLUMN=PERMISSION/,
    );
    expect(() => flags({ 'api-url': API.api_url, 'property-scopes': ['Achievements.comment=a.read'] })).toThrow(
      /^--property-scopes Achievements\.comment=a\.read: Achievements\.comment: expected a key TABLE\.COLUMN/,
    );
    expect(() => flags({ 'api-url': API.api_url, 'property-scopes': ['achievements.nope=a.read'] })).toThrow(
      /^--property-scopes: property_scopes\.achievements\.nope: achievements has no column nope/,
    );
    expect(() => resolveRunConfig(undefined, API, { SCHOOL_EXPORT_PROPERTY_SCOPES: 'achievements.comment' })).toThrow(
      /SCHOOL_EXPORT_PROPERTY_SCOPES achievements\.comment: expected TABLE\.COLUMN=PERMISSION/,
    );
  });
});

describe('lock', () => {
  it('is lease by default, none when asked, anything else an error', () => {
    expect(resolveRunConfig(undefined, API, {}).lock).toBe('lease');
    expect(resolveRunConfig(undefined, API, { SCHOOL_EXPORT_LOCK: 'none' }).lock).toBe('none');
    expect(flags({ 'api-url': API.api_url, lock: 'none' }).lock).toBe('none');
    expect(() => resolveRunConfig(file('p.json', { ...API, lock: 'maybe' }), {}, {})).toThrow(
      /lock: expected one of lease, none, got "maybe"/,
    );
    expect(() => resolveRunConfig(undefined, API, { SCHOOL_EXPORT_LOCK: 'off' })).toThrow(
      /SCHOOL_EXPORT_LOCK.*expected one of lease, none/,
    );
  });
});

describe('from the command line, before any request', () => {
  const BIN = resolve(import.meta.dirname, '../../bin/school-export.js');
  let sb: Sandbox;
  beforeAll(async () => {
    sb = await startSandbox({ schools: 1, achievementsPerSchool: 1 });
  });
  afterAll(() => sb?.close());

  const cli = (args: string[]): Promise<{ code: number | null; stderr: string }> => {
    const env = { ...process.env, SCHOOL_API_TOKEN: sb.tokens.full, SCHOOL_EXPORT_API_URL: sb.url };
    const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    return new Promise((res) => child.once('close', (code) => res({ code, stderr })));
  };

  it('a malformed --property-scopes and an unknown --lock exit 2 with one line', async () => {
    sb.control.clearRequests();
    const dest = tmp.sub('dest-');
    const scopes = await cli(['run', '--dest', dest, '--property-scopes', 'achievements.comment=not an identity']);
    expect(scopes.code).toBe(2);
    expect(scopes.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(
        /^school-export: --property-scopes achievements\.comment=not an identity: achievements\.comment: expected a permission identity/,
      ),
    ]);
    const lock = await cli(['run', '--dest', dest, '--lock', 'sometimes']);
    expect(lock.code).toBe(2);
    expect(lock.stderr).toMatch(/lock/);
    expect(sb.control.requests()).toEqual([]);
  });
});
