import { describe, expect, it } from 'vitest';
import {
  checkPropertyScopes,
  parsePropertyScopePairs,
  propertyWordKeys,
  readPermissionWords,
  wordKey,
} from '../../src/resources/scopes.ts';
import { selectResources } from '../../src/resources/index.ts';
import { ConfigError } from '../../src/errors.ts';

const guards = (identity: string, resource: string, property: string) => {
  const w = readPermissionWords(identity);
  return w !== undefined && propertyWordKeys(resource, [property]).has(wordKey(w));
};

describe('property permissions are matched tolerantly', () => {
  it.each([
    'achievements.comment.read',
    'achievement_comment.read',
    'achievement.comment.read',
    'achievements-comment.read',
    'ACHIEVEMENTS.COMMENT.READ',
    'Achievement_Comment.Read',
    'achievementComment.read',
    'achievements_comment.read',
  ])('%s guards achievements.comment', (identity) => {
    expect(guards(identity, 'achievements', 'comment')).toBe(true);
  });

  it.each([
    ['achievement_parents_notified.read', 'parents_notified', true],
    ['achievements-parents-notified.read', 'parents_notified', true],
    ['achievements.parentsNotified.read', 'parents_notified', true],
    ['achievements.parents.read', 'parents_notified', false],
    ['achievements.comment.write', 'comment', false], // not a read permission
    ['achievements.read', 'comment', false], // the object permission
    ['achievement_attributes.read', 'attributes', true], // words alone cannot tell: only declared columns are candidates
    ['comment.read', 'comment', false],
    ['achievements.comments.read', 'comment', false], // only the resource may be singular or plural
    ['ach_note_3.read', 'comment', false],
    ['assessment_results.read', 'results', false],
  ] as const)('%s guards achievements.%s: %s', (identity, property, expected) => {
    expect(guards(identity, 'achievements', property)).toBe(expected);
  });

  it('works for resources of several words and irregular plurals', () => {
    expect(guards('school_meta.custom_attendance_codes.read', 'school_meta', 'custom_attendance_codes')).toBe(true);
    expect(guards('school_meta_custom_attendance_codes.read', 'school_meta', 'custom_attendance_codes')).toBe(true);
    expect(guards('school.mis.read', 'schools', 'mis')).toBe(true);
    expect(guards('assessment_result.grade_value.read', 'assessment_results', 'grade_value')).toBe(true);
    expect(guards('category.label.read', 'categories', 'label')).toBe(true);
  });
});

describe('property_scopes settings', () => {
  const resources = selectResources(undefined, [{ name: 'students', path: '/schools/{school_id}/students' }]);
  const check = (raw: Record<string, unknown>) => checkPropertyScopes(raw, resources, { where: 'p.json', generic: new Set(['students']) });

  it('accepts TABLE.COLUMN keys of known tables and <resource>.<action> identities', () => {
    expect(check({ 'achievements.comment': 'achievement_comment.read', 'students.upn': 'student_upn.read' })).toEqual({
      'achievements.comment': 'achievement_comment.read',
      'students.upn': 'student_upn.read', // a custom table: its columns are not declared, any is allowed
    });
  });

  it.each([
    [{ 'achievements-comment': 'a.read' }, 'p.json: property_scopes.achievements-comment: expected a key TABLE.COLUMN'],
    [{ 'Achievements.comment': 'a.read' }, 'p.json: property_scopes.Achievements.comment: expected a key TABLE.COLUMN'],
    [
      { 'achievements.comment': 'read' },
      'p.json: property_scopes.achievements.comment: expected a permission identity <resource>.<action>',
    ],
    [{ 'achievements.comment': 'a b.read' }, 'p.json: property_scopes.achievements.comment: expected a permission identity'],
    [{ 'achievements.comment': 7 }, 'p.json: property_scopes.achievements.comment: expected a permission identity'],
    [{ 'achievments.comment': 'a.read' }, 'p.json: property_scopes.achievments.comment: no such table (known: schools, '],
    [
      { 'achievements.coment': 'a.read' },
      'p.json: property_scopes.achievements.coment: achievements has no column coment (known: mis_id, type,',
    ],
  ])('refuses %j naming the key', (raw, message) => {
    expect(() => check(raw)).toThrow(ConfigError);
    expect(() => check(raw)).toThrow(message);
  });

  it('reads flag and environment pairs', () => {
    expect(parsePropertyScopePairs(['achievements.comment=a_c.read,achievements.parents_notified=a_p.read'], '--property-scopes')).toEqual({
      'achievements.comment': 'a_c.read',
      'achievements.parents_notified': 'a_p.read',
    });
    expect(() => parsePropertyScopePairs(['achievements.comment'], '--property-scopes')).toThrow(
      '--property-scopes achievements.comment: expected TABLE.COLUMN=PERMISSION',
    );
  });
});
