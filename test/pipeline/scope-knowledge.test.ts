import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SCOPES_FILE, ScopeKnowledge } from '../../src/pipeline/scope-knowledge.ts';
import { selectResources } from '../../src/resources/index.ts';
import { LocalSink } from '../../src/sink/index.ts';

const resources = selectResources(['schools', 'achievements', 'school_permissions'], []);
const achievements = resources.find((r) => r.name === 'achievements')!;
const schools = resources.find((r) => r.name === 'schools')!;
const list = (...items: [string, boolean?][]) => ({ data: items.map(([identity, approved = true]) => ({ identity, approved })) });

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('ScopeKnowledge', () => {
  it('claims a column masked only when a known permission guarding it is missing or unapproved', () => {
    const k = new ScopeKnowledge(resources);
    const a = list(['achievements.read'], ['achievement_comment.read'], ['achievement_parents_notified.read', false]);
    const b = list(['achievements.read']);
    // B is decided after A was learned: A's list makes the names known for B too, whatever order they were read in.
    k.learn(b);
    k.learn(a);
    expect(k.decide(ScopeKnowledge.granted(a))).toEqual(['achievements.parents_notified']); // listed but not approved
    expect(k.decide(ScopeKnowledge.granted(b))).toEqual(['achievements.comment', 'achievements.parents_notified']);
    expect(k.undeterminedProperties()).toEqual([]);
    expect(k.undeterminedNote()).toBeUndefined();
  });

  it('claims nothing for a property no known permission names, and says so once', () => {
    const k = new ScopeKnowledge(resources);
    const only = list(['achievements.read'], ['ACHIEVEMENTS.COMMENT.READ', false]);
    k.learn(only);
    expect(k.decide(ScopeKnowledge.granted(only))).toEqual(['achievements.comment']);
    expect(k.decide(ScopeKnowledge.granted(list(['achievements.read'])))).toEqual(['achievements.comment']);
    expect(k.undeterminedProperties()).toEqual(['achievements.parents_notified']);
    expect(k.undeterminedNote()).toMatch(
      /^cannot tell whether the token's scopes hide achievements\.parents_notified: no permission in the schools' lists names it, so nothing was claimed/,
    );
  });

  it('configured names count as known; matching ignores case', () => {
    const k = new ScopeKnowledge(resources, {
      'achievements.comment': 'ach_note_3.read',
      'achievements.parents_notified': 'ach_note_4.read',
    });
    expect(k.decide(ScopeKnowledge.granted(list(['ACH_NOTE_3.READ'], ['ach_note_4.read', false])))).toEqual([
      'achievements.parents_notified',
    ]);
    expect(k.undeterminedProperties()).toEqual([]);
  });

  it('learns guarded properties of declared columns from the lists (schools.mis), and lists what each task guards', () => {
    const k = new ScopeKnowledge(resources);
    expect(k.guardedOf(schools)).toEqual([]);
    k.learn(list(['school_mis.read'], ['schools.read']));
    expect(k.guardedOf(schools)).toEqual(['schools.mis']);
    expect(k.guardedOf(achievements)).toEqual(['achievements.comment', 'achievements.parents_notified']);
    expect(k.unknownIn(achievements)).toBe(true);
    expect(k.unknownIn(schools)).toBe(false);
    // Only declared or configured properties are worth a permissions request of their own.
    expect([k.guards(achievements), k.guards(schools)]).toEqual([true, false]);
    expect(new ScopeKnowledge(resources, { 'schools.mis': 'x.read' }).guards(schools)).toBe(true);
    expect(k.decide(ScopeKnowledge.granted(list(['schools.read'])))).toEqual(['schools.mis']);
  });

  it('a response without a list claims nothing', () => {
    const k = new ScopeKnowledge(resources, { 'achievements.comment': 'a.read' });
    expect(k.decide(ScopeKnowledge.granted({}))).toEqual([]);
    expect(k.decide(ScopeKnowledge.granted(undefined))).toEqual([]);
  });

  it('remembers what it learned at the destination, merged with what is there, and ignores a torn memory', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'scopes-'));
    dirs.push(dir);
    const sink = new LocalSink(dir);
    const first = await ScopeKnowledge.load(sink, resources, {});
    first.learn(list(['achievement_comment.read']));
    await first.save(sink);
    const other = await ScopeKnowledge.load(sink, resources, {});
    expect(other.unknownIn(achievements)).toBe(true); // parents_notified still unknown
    other.learn(list(['achievement_parents_notified.read']));
    await other.save(sink);
    expect(JSON.parse(readFileSync(join(dir, SCOPES_FILE), 'utf8'))).toEqual({
      identities: {
        'achievements.comment': ['achievement_comment.read'],
        'achievements.parents_notified': ['achievement_parents_notified.read'],
      },
    });
    const known = await ScopeKnowledge.load(sink, resources, {});
    expect(known.decide(ScopeKnowledge.granted(list()))).toEqual(['achievements.comment', 'achievements.parents_notified']);

    mkdirSync(join(dir, '_state'), { recursive: true });
    writeFileSync(join(dir, SCOPES_FILE), '{"identities": {"achievements.comment": ["ok.read", 5], "../x": ["a.read"]}');
    const torn = await ScopeKnowledge.load(sink, resources, {});
    expect(torn.unknownIn(achievements)).toBe(true);
    writeFileSync(join(dir, SCOPES_FILE), '{"identities": {"achievements.comment": ["ok.read", 5], "../x": ["a.read"]}}');
    const partly = await ScopeKnowledge.load(sink, resources, {});
    expect(partly.decide(ScopeKnowledge.granted(list(['ok.read'])))).toEqual([]);
    expect(partly.undeterminedProperties()).toEqual(['achievements.parents_notified']);
  });
});
