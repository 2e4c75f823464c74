/**
 * docs/personal-data.md, generated from the resource declarations and the rule tables of
 * src/privacy, so the page cannot disagree with the code: `npm run docs:personal-data` writes it,
 * test/privacy/docs.test.ts fails when it is stale.
 */
import { RESOURCES, tableSchemas, PERSON_DELETION_TYPES } from '../resources/index.ts';
import type { TableSchema } from '../table.ts';
import { dataMap, exampleClasses } from './datamap.ts';
import {
  DIRECT_IDENTIFIER_NAMES,
  DIRECT_IDENTIFIER_WORDS,
  FREE_TEXT_WORDS,
  NOT_PERSONAL,
  NOT_PERSONAL_ELSEWHERE,
  OWN_ID,
  PERSON_NAME_WORDS,
  PERSON_WORDS,
} from './name-rules.ts';
import { CLASS_ACTIONS } from './policy.ts';
import { MIN_KEY_BYTES } from './pseudonym.ts';
import { KEY_FILE_ENV } from './config.ts';
import { DESTINATION_RECORD } from './destination.ts';
import { CHANGED_BY_ENV } from './guard.ts';

const code = (s: string) => '`' + s + '`';
const codes = (xs: readonly string[]) => xs.map(code).join(', ');
const re = (r: RegExp) => code(r.source);

export function builtinTables(): TableSchema[] {
  return RESOURCES.flatMap((r) => tableSchemas(r));
}

function tableSection(tables: readonly TableSchema[]): string[] {
  const out: string[] = [];
  for (const t of dataMap(tables)) {
    out.push(`### ${t.table}`, '');
    if (t.personal.length) {
      out.push('| column | class |', '|---|---|');
      for (const c of t.personal) {
        const when = c.when ? ` when ${code(c.when.column)} is one of ${codes(c.when.in)}` : '';
        out.push(`| ${code(c.column)} | ${code(c.class)}${when} |`);
      }
      out.push('');
    } else out.push('No declared column holds anything about a person.', '');
    out.push(
      t.people
        ? 'A table of people: every undeclared field describes a person and is classified by the name rules below (an id there is a person id; a field no rule names is `unsure`).'
        : 'Undeclared fields: classified by the name rules below.',
      '',
    );
  }
  return out;
}

/** A destination keeps its policy and format; tightening leaves nothing behind (issue 22). */
function destinationSection(): string[] {
  return [
    '## A destination keeps its policy',
    '',
    `The first run into a destination records its policy (the three actions, the overrides and the key's fingerprint, never the key) and its format in \`${DESTINATION_RECORD}\`. Every later run (and \`--dry-run\`) compares its own with that record before the lease and before any request:`,
    '',
    "- **Weaker anywhere, or another key**: a class or an override less strict than the destination's (`keep` where it pseudonymised or dropped, `pseudonymise` where it dropped), no policy at all where there was one, or another pseudonymisation key: the run stops with exit status 2 (`E_POLICY_CHANGE`) and one line naming each difference, having read and written nothing. Forgetting the flags can no longer write children's names beside pseudonymised files.",
    `- \`--personal-data-change\` accepts such a change. It is a flag of one command line, never a setting: a pipeline file key or \`SCHOOL_EXPORT_PERSONAL_DATA_CHANGE\` is refused (exit 2), because a setting would accept every later change without anyone deciding it. The run manifest records the change in \`personal_data.change\`: \`kind\` (\`stricter\` or \`accepted\`), \`by\`, \`at\`, the policy it replaced (\`from\`) and each difference; \`by\` is \`${CHANGED_BY_ENV}\` when set (a name, a ticket), else the process's \`user@host\`.`,
    '- **Stricter**: accepted, announced in the summary (and by `--dry-run`) and recorded in the manifest the same way.',
    "- Either way the new policy's fingerprint differs from the one each school's state records per resource, so every resource is read again in full under it.",
    "- **Another format**: a run writing another format than the destination's files stops with exit status 2 (`E_FORMAT_CHANGE`) unless `--format-change` (a flag only, recorded in the manifest's `format_change`). `warehouse load` (DuckDB) reads every file by its own type, so a mixed destination loads correctly; the BigQuery and Snowflake scripts read Parquet only and refuse other files.",
    '',
    'A destination written before this record existed gets one from its latest run manifest (its format and policy, and the undeclared fields every manifest lists) the first time a run or `datamap --dest` reads it.',
    '',
    '### Tightening leaves nothing behind',
    '',
    "When the policy becomes stricter (or the key changes), the files written before still hold what the new policy would not write. When a resource's full read under the new policy commits, the same state write records `purge_before` (the read's snapshot run) for it; at the end of the run, each school whose every resource has been read again has its files of earlier runs deleted: the data files of every table, the snapshot id lists no state names any more, and the deletion records those runs' manifests list for the school (they hold ids as the weaker policy wrote them). The purge is written first, as a purge manifest (`_manifests/<run_id>.json` with `purged[]` entries carrying `before_run`), so `warehouse load` and the BigQuery and Snowflake scripts drop the school's rows staged from runs before `before_run` from every current-state and `_raw_` table and never load those runs' tasks. The run summary says how many files went.",
    '',
    'A school with a resource not read again yet (its task failed, or `--resources` left it out) keeps its files until a later run reads that resource: the marks stay in its state, `school-export status` names the schools that still hold data from a weaker policy, and the summary says how many are waiting. A relaxed policy (accepted with `--personal-data-change`) deletes nothing: what was written before is stricter than what follows.',
    '',
  ];
}

export function renderPersonalDataDoc(tables: readonly TableSchema[] = builtinTables()): string {
  const examples = exampleClasses(tables);
  const lines = [
    '# Personal data',
    '',
    '<!-- Generated by `npm run docs:personal-data` from src/resources (the declarations) and src/privacy (the rules and the policy). Do not edit by hand: test/privacy/docs.test.ts fails when this file is stale. -->',
    '',
    "Most of what school-export copies is children's personal data: names, UPNs and dates of birth of the students embedded in achievements, ids of students, contacts and employees, and teachers' comments. This page is the data map (which column holds what about a person), the rules for fields nobody declared, and what the `personal_data` policy does to each class, so that users who may only hold pseudonymised data (analytics teams, researchers, vendors) can export just that.",
    '',
    '## Classes',
    '',
    '| class | holds | actions |',
    '|---|---|---|',
    `| ${code('person_id')} | an id of a student, contact or employee, or their MIS id | ${codes(CLASS_ACTIONS.person_id)} |`,
    `| ${code('direct_identifier')} | a name, UPN, email, phone, date of birth or address line of a person | ${codes(CLASS_ACTIONS.direct_identifier)} |`,
    `| ${code('free_text')} | comments and notes: may contain anything | ${codes(CLASS_ACTIONS.free_text)} |`,
    `| ${code('unsure')} | an undeclared field that no name rule recognises | the strictest action the policy gives any class |`,
    '',
    'A person id is never dropped (rows would lose their key and joins); free text has nothing to join on, so it is kept or dropped.',
    '',
    '## The policy',
    '',
    'In the pipeline file:',
    '',
    '```json',
    '{',
    '  "personal_data": {',
    '    "person_id": "pseudonymise",',
    '    "direct_identifier": "drop",',
    '    "free_text": "drop",',
    '    "columns": { "assessment_results.result": "keep" }',
    '  },',
    '  "pseudonymise_key_file": "/etc/school-export/pseudonymise.key"',
    '}',
    '```',
    '',
    '| flag (pipeline key) | values | default |',
    '|---|---|---|',
    '| `--person-id` (`personal_data.person_id`) | `keep`, `pseudonymise` | `keep` |',
    '| `--direct-identifier` (`personal_data.direct_identifier`) | `keep`, `pseudonymise`, `drop` | `keep` |',
    '| `--free-text` (`personal_data.free_text`) | `keep`, `drop` | `keep` |',
    '| `--personal-column TABLE.COLUMN=ACTION`, repeatable (`personal_data.columns`) | `keep`, `pseudonymise`, `drop` | none |',
    `| \`--pseudonymise-key-file PATH\` (\`pseudonymise_key_file\`, else \`${KEY_FILE_ENV}\`) | a file of at least ${MIN_KEY_BYTES} random bytes | none |`,
    '',
    'Flags win over the file, column by column. The default keeps every value as read (the behaviour before this policy existed). What the actions do:',
    '',
    "- **drop**: a declared column stays in the table and holds null; an undeclared field is removed (from NDJSON keys and from the `_extra` JSON of CSV and Parquet). Its name still appears in the manifest's `drift_fields`: names of fields are not personal data.",
    '- **pseudonymise**: the value becomes a pseudonym (below). A column typed timestamp, number or boolean cannot hold one and is dropped instead; so is the `__timezone` of a pseudonymised datetime. Nulls and booleans are left as they are.',
    "- **keep**: as read. Person ids inside JSON (the ACL's `ids`, an undeclared list of people) are transformed element by element; the other fields of people found there follow the name rules.",
    '- A per-column override (`"achievements.comment": "drop"`) wins over the class, applies to undeclared columns too (`"achievement_students.year_group": "drop"`) and to the column\'s `__timezone` and `__raw` companions, and is applied as written (no looking inside JSON).',
    '',
    'Refused before any request, with one line naming the setting (exit status 2): an unknown action; an override whose table is not part of the run, that names a metadata column, that drops a key column, or that pseudonymises a typed column; an override naming a column that the table does not declare, that no name rule below recognises and that no run of the destination saw (a misspelling: the message names the closest known columns, `did you mean achievements.comment?`); a policy that pseudonymises without a key file, or a key file that cannot be read or is too short.',
    '',
    "Every run manifest (and each part) says what was applied in `personal_data`: the three actions, the overrides and, when something was pseudonymised, `key_id`, a fingerprint of the key (16 hex digits of an HMAC of a fixed label under the key; never the key, and nothing can be learnt about the key from it). Files with different `key_id`s do not join. The run summary prints the same on one line, so a loader or a person can refuse data that was not minimised. The run manifest's `personal_data.matched` lists, and the summary prints, each entry of the policy with the columns (`table.column`) it decided in that run's rows: `classes` per class (`unsure` when a field no rule names got the strictest action) and `columns` per override; an override that matched nothing says so.",
    '',
    "Fields the service sends without declaring them are reported apart: the fields of included students and employees (not part of the API contract at all) as `fields of included people in <table>`, other undeclared fields as `schema drift in <table>`, each with what the policy in force did to it (dropped, pseudonymised, kept). The run summary's JSON has them in `includeFields`, `drift` and `fieldActions`.",
    '',
    "Each school's state file records, per resource, a fingerprint of the policy and key its rows were written with. When it changes (a policy is switched on, a key is rotated), the next run reads that resource again in full, like after a migration: a loader then replaces the school's old rows of the table (`mode: full`), so current-state tables never mix values transformed two ways.",
    '',
    ...destinationSection(),
    '## Data map',
    '',
    "`school-export datamap [PIPELINE_FILE] [--dest D] [--json]` prints this map for your configuration: every column of every table (custom resources included) with its class (`person_id`, `direct_identifier`, `free_text`, `unsure`, `none`), where the class comes from (`declaration`, `name rule`, `strictest default` for a field no rule names, `metadata`) and the action the policy takes. The policy shown is the one the settings give (pipeline file, environment, the same policy flags as `run`), else the one the destination keeps. With `--dest`, the undeclared fields that destination's runs saw are listed too, so you can see how the fields your service actually sends were classified, and give one an explicit action with an override.",
    '',
    "Per table, the declared columns that hold something about a person (src/resources declares them). Every table also carries the metadata columns `_school_id`, `_region`, `_run_id`, `_extracted_at`: they name the school, never a person. The schools' own names and addresses are an organisation's, not a person's.",
    '',
    ...tableSection(tables),
    '## Name rules for undeclared fields',
    '',
    'Fields the service sends that no declaration names (the fields of included students and employees, which are not part of its contract; new fields; every field of a `custom_resources` table) are classified from the table and column name alone, once per column per run. The first rule that matches wins. The column name is the flattened one (`address__postcode`); "last part" is the part after the last `__`, and its words are split on `_`.',
    '',
    "1. `<col>__timezone` and `<col>__raw` (a datetime's zone, a value that did not fit its declared type) have the class of `<col>`.",
    `2. **direct_identifier**: the last part is one of ${codes(DIRECT_IDENTIFIER_NAMES)}, or has one of the words ${codes(DIRECT_IDENTIFIER_WORDS)}.`,
    `3. **free_text**: the last part has one of the words ${codes(FREE_TEXT_WORDS)}.`,
    `4. **person_id**: the last part names a person (ignoring a trailing \`_id\`/\`_ids\`): its last word is one of ${codes(PERSON_WORDS)} (or a plural: \`students\`, \`people\`, \`children\`), or it is a role such as \`recorded_by\`, \`created_by\`, \`author_id\`.`,
    `5. In a table of people (its name's last word names a person: \`achievement_students\`, \`students\`, \`student_contacts\`) or under a part that names a person (\`student__...\`), and inside a list of people: ${re(OWN_ID)} is a **person_id**; a last part with one of the words ${codes(PERSON_NAME_WORDS)} is a **direct_identifier**; a name matching ${NOT_PERSONAL.map(re).join(', ')} holds nothing personal; anything else is **unsure**.`,
    `6. Elsewhere, a name matching ${[...NOT_PERSONAL, ...NOT_PERSONAL_ELSEWHERE].map(re).join(', ')} holds nothing personal; anything else is **unsure**.`,
    '',
    '`unsure` gets the strictest action the policy gives any class (drop before pseudonymise before keep): a field we cannot name may hold anything about a child. Give it an explicit action with a per-column override when you know better.',
    '',
    'Examples, classified by the code above:',
    '',
    '| table | column | class | by |',
    '|---|---|---|---|',
    ...examples.map((e) => `| ${e.table} | ${code(e.column)} | ${e.class ? code(e.class) : 'not personal'} | ${e.how} |`),
    '',
    '## Pseudonyms',
    '',
    '`p_` followed by 24 characters of lower-case base32 (RFC 4648 alphabet `a-z2-7`, no padding) of the first 120 bits of HMAC-SHA256(key, the value as UTF-8). Numbers are pseudonymised as their decimal text, so `5054` and `"5054"` agree.',
    '',
    '- The same value gives the same pseudonym in every run, table, shard and format while the key is the same: `achievement_students.id` still joins `assessment_results.student`, a pseudonymised deletion still names the pseudonymised row, and an ACL entry still names the same person.',
    '- Collision bound: with n distinct values, the chance that any two share a pseudonym is at most n²/2^121: about 4·10^-19 for a billion people, 4·10^-13 for a trillion ids.',
    '- A pseudonym cannot be mistaken for a service id (those are `A` followed by digits), and pseudonymising a pseudonym returns it unchanged, so a row transformed twice still joins.',
    '- Without the key nobody can compute a pseudonym from an id or go back. With it, anyone holding a list of real ids can: pseudonymised data is still personal data under GDPR. Keep the key away from whoever receives the data.',
    '',
    '## The key',
    '',
    '```sh',
    'umask 077 && openssl rand -base64 48 > ./pseudonymise.key',
    'npx school-export run pipelines/nightly.json --person-id pseudonymise --pseudonymise-key-file ./pseudonymise.key',
    '```',
    '',
    `The key is the file's bytes without trailing white space (an editor's final newline does not change it); at least ${MIN_KEY_BYTES} bytes. It is read once when the run starts, from \`--pseudonymise-key-file\`, \`pseudonymise_key_file\` or \`${KEY_FILE_ENV}\`, never from a flag value (it would show in the process list), and never written anywhere: manifests carry only its fingerprint. A policy that pseudonymises without a key stops before any request (exit status 2).`,
    '',
    "**Rotating the key breaks joins with older data.** Every pseudonym changes: files and warehouse rows written with the old key no longer join new ones, and the same person appears under two pseudonyms. A run with another key than the destination's stops (exit 2) unless `--personal-data-change` accepts it; it then reads every resource of every school again in full, and deletes each school's files written with the old key once all of its resources are replaced (as a tightening does, below), so the destination and the warehouse's current and raw tables converge to the new pseudonyms. Copies others hold keep the old ones. Destroy the old key once nothing needs to join old data. Losing the key has the same effect as rotating it.",
    '',
    '## Deletions, the ACL and snapshot id lists',
    '',
    `- The \`deletions\` table's \`id\` and \`mis_id\` are person ids when \`type\` is one of ${codes(PERSON_DELETION_TYPES)}; other types (achievements, classes...) name things, not people, and are kept. The manifest's \`deletions\` list holds the same transformed ids, so a warehouse merge deletes and restores the pseudonymised rows.`,
    "- The ACL's `ids` (strings, or `{id, type}` objects) are person ids: each id is transformed, the types are kept, `id_count` is unchanged.",
    '- The id lists kept for snapshot deletion detection (`_state/ids/...`) hold the ids as written, so the next snapshot compares like with like.',
    '',
    '## Purge',
    '',
    "A purge after a school revokes or declines access (`webhooks serve --purge-on-revoke`) removes every file with the school's `school_id=<id>` path segment: the files of every table, its state file and its snapshot id lists. Run manifests stay as history, but the deletion records they list for the school (ids of its students, contacts and employees) are removed from them; the purge manifest tells loaders to drop the school's rows (`warehouse load` empties them from every table).",
    '',
    '## What this does not do',
    '',
    '- Free text that is kept is copied as it is: a name inside a comment stays there.',
    '- Files a school no longer exported keeps (a school no longer approved, a custom resource removed from the pipeline file) are not re-read, so a tightening cannot replace them: `status` counts such schools while their resources are not read again; purge them or start a new destination.',
    '- Quasi-identifiers (a year group, a date an achievement was recorded) are kept: with enough of them a person may still be singled out. Drop more with per-column overrides when the receiver does not need them.',
    '',
  ];
  return lines.join('\n');
}
