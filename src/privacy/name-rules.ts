/**
 * Name rules: the class of a column nobody declared (schema drift, fields of included people,
 * every field of a pipeline file's custom resources), decided from the table and column names
 * only, once per column per run (never from values, never per row). docs/personal-data.md prints
 * these tables, so the documentation and the code cannot disagree.
 *
 * A name that no rule recognises is `unsure`: the policy treats it with the strictest action it
 * gives any class, because a field we cannot name may hold anything about a child.
 */
import type { PersonalClass } from '../table.ts';

export type NameClass = PersonalClass | 'unsure';

/** Words that name people (singular and plural): a table whose last word is one holds people. */
export const PERSON_WORDS: readonly string[] = [
  'student',
  'pupil',
  'learner',
  'child',
  'applicant',
  'leaver',
  'contact',
  'parent',
  'guardian',
  'carer',
  'employee',
  'staff',
  'teacher',
  'tutor',
  'person',
  'user',
  'member',
];
const IRREGULAR: Record<string, string> = { children: 'child', people: 'person', staff: 'staff' };
const PERSON_SET = new Set(PERSON_WORDS);

/** References to a person by role rather than by word: `recorded_by`, `author_id`. */
const PERSON_REF =
  /^(author|owner|assignee|(recorded|created|updated|deleted|modified|entered|reported|assigned|approved|issued)_by)(_id|_ids)?$/;

/** Word(s) of a column name that make it a direct identifier anywhere. */
export const DIRECT_IDENTIFIER_WORDS: readonly string[] = [
  'forename',
  'forenames',
  'surname',
  'surnames',
  'initials',
  'nickname',
  'upn',
  'uln',
  'uci',
  'email',
  'phone',
  'mobile',
  'telephone',
  'fax',
  'address',
  'postcode',
  'dob',
  'birthday',
  'passport',
  'username',
  'signature',
  'photo',
];
/** Whole column names that are direct identifiers anywhere. */
export const DIRECT_IDENTIFIER_NAMES: readonly string[] = [
  'first_name',
  'last_name',
  'middle_name',
  'middle_names',
  'given_name',
  'given_names',
  'family_name',
  'full_name',
  'display_name',
  'maiden_name',
  'date_of_birth',
  'birth_date',
  'birthdate',
  'place_of_birth',
  'street',
  'post_code',
  'zip',
  'zip_code',
  'ni_number',
  'national_insurance_number',
  'candidate_number',
  'login',
];
/** Words that make a column a direct identifier when it describes a person. */
export const PERSON_NAME_WORDS: readonly string[] = ['name', 'names', 'title', 'salutation'];

/** Word(s) of a column name that make it free text. */
export const FREE_TEXT_WORDS: readonly string[] = [
  'comment',
  'comments',
  'note',
  'notes',
  'remark',
  'remarks',
  'narrative',
  'feedback',
  'observation',
  'observations',
  'reason',
  'details',
  'description',
  'message',
  'body',
  'text',
  'summary',
  'incident',
  'concern',
  'concerns',
  'statement',
  'explanation',
  'memo',
  'content',
];

/** Columns known to hold nothing about a person (in a person's record too: a year group is not an identifier). */
export const NOT_PERSONAL: readonly RegExp[] = [
  /_(at|date|time|on)$/, // timestamps and dates (a date of birth matched a rule above first)
  /^(date|time|start|end|timezone)$/,
  /^(type|kind|code|status|state|active|enabled|deleted|locked|optional|approved|audited|online|current)$/,
  /^(points|total_points|score|count|total|order|position|sequence|version|level|rank)$/,
  /^(year_group|year|term|academic_year|house|category|source|module|supplier|region|language|currency|colour|color)$/,
  /^(is|has|can|allow|allows|show)_/,
  /_(count|type|code|status|flag|points|score|total|order|level|enabled)$/,
];
/** Columns that hold nothing personal in a record that is not a person's (a group's name, a room's id). */
export const NOT_PERSONAL_ELSEWHERE: readonly RegExp[] = [/^(id|mis_id|external_id|name|short_name|title|label|abbreviation)$/, /_id$/];
/** Columns of a person's record that are ids of that person. */
export const OWN_ID = /^(id|ids|mis_id|external_id|person_id|mis_person_id)$/;

function singular(word: string): string {
  if (IRREGULAR[word]) return IRREGULAR[word];
  return word.endsWith('s') ? word.slice(0, -1) : word;
}

/** `students`, `student`, `people` -> a person word. */
export function isPersonWord(word: string): boolean {
  return PERSON_SET.has(word) || PERSON_SET.has(singular(word));
}

/** A table of people: its last word is a person word (achievement_students, students, student_contacts). */
export function isPersonTable(table: string): boolean {
  const words = table.toLowerCase().split('_');
  return isPersonWord(words[words.length - 1]!);
}

/** A segment that refers to a person: `student`, `student_id`, `students`, `recorded_by`, `main_contact_ids`. */
function refersToPerson(segment: string): boolean {
  if (PERSON_REF.test(segment)) return true;
  const words = segment.split('_');
  while (words.length > 1 && (words[words.length - 1] === 'id' || words[words.length - 1] === 'ids')) words.pop();
  return isPersonWord(words[words.length - 1]!);
}

const DI_WORDS = new Set(DIRECT_IDENTIFIER_WORDS);
const DI_NAMES = new Set(DIRECT_IDENTIFIER_NAMES);
const NAME_WORDS = new Set(PERSON_NAME_WORDS);
const FT_WORDS = new Set(FREE_TEXT_WORDS);

/**
 * The class of an undeclared column `column` (flattened, `a__b`) of `table`; undefined when the
 * name says it is not personal. `person: true` classifies a key inside a value already known to
 * describe people (an element of a person-id JSON list).
 */
export function classifyName(table: string, column: string, opts: { person?: boolean } = {}): NameClass | undefined {
  const segs = column.toLowerCase().split('__');
  const last = segs[segs.length - 1]!;
  const words = last.split('_');
  const personal = opts.person === true || isPersonTable(table) || segs.slice(0, -1).some(refersToPerson);

  if (DI_NAMES.has(last) || words.some((w) => DI_WORDS.has(w))) return 'direct_identifier';
  if (words.some((w) => FT_WORDS.has(w))) return 'free_text';
  if (refersToPerson(last)) return 'person_id';
  if (personal) {
    if (OWN_ID.test(last)) return 'person_id';
    if (words.some((w) => NAME_WORDS.has(w))) return 'direct_identifier';
    if (NOT_PERSONAL.some((r) => r.test(last))) return undefined;
    return 'unsure';
  }
  if (NOT_PERSONAL.some((r) => r.test(last)) || NOT_PERSONAL_ELSEWHERE.some((r) => r.test(last))) return undefined;
  return 'unsure';
}

/** `<col>__timezone` (a datetime's zone) and `<col>__raw` (a value that did not fit its type) follow `<col>`. */
export function companionOf(column: string): { base: string; kind: 'timezone' | 'raw' } | undefined {
  if (column.endsWith('__timezone')) return { base: column.slice(0, -'__timezone'.length), kind: 'timezone' };
  if (column.endsWith('__raw')) return { base: column.slice(0, -'__raw'.length), kind: 'raw' };
  return undefined;
}
