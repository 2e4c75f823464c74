import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { DuckDBInstance } from '@duckdb/node-api';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { runExport } from '../../src/pipeline/run.ts';
import { builtinTables, warehouseLoad } from '../../src/warehouse/commands.ts';
import { createPseudonymiser, PseudonymiseKey, PSEUDONYM_RE } from '../../src/privacy/pseudonym.ts';
import { PERSON_DELETION_TYPES } from '../../src/resources/index.ts';
import type { Manifest } from '../../src/manifest/types.ts';
import type { PipelineConfig } from '../../src/config/schema.ts';
import { sandboxConfig, tempDir } from './helpers.ts';

/**
 * Issue 12's "done when": with person ids pseudonymised, direct identifiers and free text dropped,
 * an export of every built-in table in every format holds none of the sandbox's names, UPNs, dates
 * of birth, comments or raw person ids anywhere (file bytes, gzip contents, Parquet values,
 * manifests, state, id lists), nor does the DuckDB warehouse loaded from it, while joins between
 * achievements, achievement_students and assessment_results give the same counts as without it.
 * The same search run over an export without the policy finds every kind of value, so it can fail.
 */
const STRICT: PipelineConfig['personal_data'] = { person_id: 'pseudonymise', direct_identifier: 'drop', free_text: 'drop' };
const FORMATS = [
  { name: 'ndjson', flags: { format: 'ndjson' } },
  { name: 'ndjson+gzip', flags: { format: 'ndjson', gzip: true } },
  { name: 'csv', flags: { format: 'csv' } },
  { name: 'parquet', flags: { format: 'parquet' } },
] as const satisfies readonly { name: string; flags: PipelineConfig }[];

type Kind = 'name' | 'upn' | 'date of birth' | 'comment' | 'person id';
interface Needle {
  kind: Kind;
  text: string;
}

/** The sandbox's own person values, from its control API and its HTTP API (never a hard-coded list). */
async function personValues(sb: Sandbox): Promise<{ needles: Needle[]; schools: string[]; studentIds: string[] }> {
  const res = await fetch(`${sb.url}/v1.0/schools?per_page=1000`, { headers: { authorization: `Bearer ${sb.tokens.full}` } });
  const schools = ((await res.json()) as { data: { id: string; region: { code: string } }[] }).data;
  const values = new Map<string, Kind>();
  const add = (kind: Kind, v: unknown) => {
    if (typeof v === 'string' && v.trim() !== '') values.set(v, kind);
  };
  const studentIds: string[] = [];
  for (const s of schools) {
    for (const p of sb.control.records(s.id, 'students')) {
      add('name', p.forename);
      add('name', p.surname);
      add('upn', p.upn);
      add('person id', p.id);
      studentIds.push(String(p.id));
      const dob = (p.date_of_birth as { date: string }).date.slice(0, 10);
      // as the API sends it, as the flattener writes it: followed by a non-digit, so other dates never match
      add('date of birth', `${dob} 00:00:00`);
      add('date of birth', `${dob}T00:00:00`);
    }
    for (const p of sb.control.records(s.id, 'employees')) {
      add('name', p.forename);
      add('name', p.surname);
      add('person id', p.id);
    }
    for (const a of sb.control.records(s.id, 'achievements')) add('comment', a.comment);
    for (const d of sb.control.records(s.id, 'deletions')) if (PERSON_DELETION_TYPES.includes(String(d.type))) add('person id', d.id);
    const regionUrl = sb.regions.find((r) => r.code === s.region.code)!.url;
    const acl = await fetch(`${regionUrl}/v1.0/meta/schools/${s.id}/acl`, { headers: { authorization: `Bearer ${sb.tokens.full}` } });
    for (const id of ((await acl.json()) as { data: { ids: string[] } }).data.ids) add('person id', id);
  }
  // Every way a writer may spell a value: as is, JSON-escaped, CSV-quoted, and CSV-quoted JSON (`_extra`).
  const needles: Needle[] = [];
  for (const [v, kind] of values) {
    const json = JSON.stringify(v).slice(1, -1);
    for (const text of new Set([v, json, v.replace(/"/g, '""'), json.replace(/"/g, '""')])) needles.push({ kind, text });
  }
  return { needles, schools: schools.map((s) => s.id), studentIds };
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Finds needles as whole values: not inside a longer word ("Ng" in "Ngā Tamariki Kura" is a school's name). */
function searcher(needles: Needle[]) {
  const kinds = new Map(needles.map((n) => [n.text, n.kind]));
  const sorted = [...kinds.keys()].sort((a, b) => b.length - a.length);
  const re = new RegExp(`(?<![\\p{L}\\p{N}])(?:${sorted.map(escape).join('|')})(?![\\p{L}\\p{N}])`, 'gu');
  // Raw bytes of compressed files: only needles long enough never to occur by chance.
  const longRe = new RegExp(
    sorted
      .filter((t) => Buffer.byteLength(t) >= 8)
      .map(escape)
      .join('|'),
    'gu',
  );
  return (text: string, where: string, binary = false): { kind: Kind; text: string; where: string }[] =>
    [...text.matchAll(binary ? longRe : re)].map((m) => ({ kind: kinds.get(m[0])!, text: m[0], where }));
}

function walk(dir: string, base = ''): string[] {
  return readdirSync(join(dir, base), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(dir, `${base}${e.name}/`) : [`${base}${e.name}`],
  );
}

async function duckText(sql: string): Promise<string> {
  const inst = await DuckDBInstance.create(':memory:');
  const conn = await inst.connect();
  try {
    return JSON.stringify((await conn.runAndReadAll(sql)).getRowsJson());
  } finally {
    conn.closeSync();
  }
}

/** Everything the destination holds, as text: file bytes, gzip contents, Parquet values and metadata. */
async function destinationHits(dir: string, find: ReturnType<typeof searcher>) {
  const hits = [];
  const files = walk(dir);
  for (const f of files) {
    const bytes = readFileSync(join(dir, f));
    const binary = f.endsWith('.gz') || f.endsWith('.parquet');
    hits.push(...find(bytes.toString('utf8'), f, binary));
    if (f.endsWith('.gz')) hits.push(...find(gunzipSync(bytes).toString('utf8'), `${f} (gunzipped)`));
    if (f.endsWith('.parquet')) {
      const p = join(dir, f).replace(/'/g, "''");
      const text = await duckText(
        `SELECT (SELECT list(t::VARCHAR) FROM read_parquet('${p}', hive_partitioning = false) t) AS v,` +
          ` (SELECT list(m::VARCHAR) FROM parquet_kv_metadata('${p}') m) AS kv,` +
          ` (SELECT list(s::VARCHAR) FROM parquet_metadata('${p}') s) AS md`,
      );
      hits.push(...find(text, `${f} (values)`));
    }
  }
  return { hits, files };
}

/** Every value of every table in the warehouse, as text. */
async function warehouseHits(db: string, find: ReturnType<typeof searcher>) {
  const inst = await DuckDBInstance.create(db);
  const conn = await inst.connect();
  const hits = [];
  try {
    const tables = (await conn.runAndReadAll(`SELECT table_schema, table_name FROM information_schema.tables`)).getRows();
    for (const [schema, table] of tables) {
      const rows = await conn.runAndReadAll(`SELECT t::VARCHAR FROM "${String(schema)}"."${String(table)}" t`);
      hits.push(...find(JSON.stringify(rows.getRowsJson()), `warehouse ${String(schema)}.${String(table)}`));
    }
    return { hits, tables: tables.map((t) => String(t[1])) };
  } finally {
    conn.closeSync();
  }
}

async function joinCounts(db: string) {
  const inst = await DuckDBInstance.create(db);
  const conn = await inst.connect();
  const one = async (sql: string) => Number((await conn.runAndReadAll(sql)).getRows()[0]![0]);
  try {
    return {
      achievement_students: await one(
        `SELECT count(*) FROM achievements a JOIN achievement_students s ON s._school_id = a._school_id AND s.achievement_id = a.id`,
      ),
      students_results: await one(
        `SELECT count(*) FROM achievement_students s JOIN assessment_results r ON r._school_id = s._school_id AND r.student = s.id`,
      ),
      all_three: await one(
        `SELECT count(*) FROM achievements a JOIN achievement_students s ON s._school_id = a._school_id AND s.achievement_id = a.id
         JOIN assessment_results r ON r._school_id = s._school_id AND r.student = s.id`,
      ),
      students: await one(`SELECT count(DISTINCT (_school_id, id)) FROM achievement_students`),
      assessed: await one(`SELECT count(DISTINCT (_school_id, student)) FROM assessment_results`),
      assessed_with_achievements: await one(
        `SELECT count(DISTINCT (r._school_id, r.student)) FROM assessment_results r
         WHERE EXISTS (SELECT 1 FROM achievement_students s WHERE s._school_id = r._school_id AND s.id = r.student)`,
      ),
      person_deletions: await one(`SELECT count(*) FROM deletions WHERE type IN ('student', 'contact', 'employee')`),
    };
  } finally {
    conn.closeSync();
  }
}

describe('personal data: pseudonymised person ids, no direct identifiers or free text, in every format', () => {
  let sb: Sandbox;
  const tmp = tempDir('pd-e2e-');
  const keyFile = join(tmp.dir, 'pseudonymise.key');
  const keyText = 'e2e test key: 0123456789abcdefghijklmnopqrstuvwxyz';
  let values: Awaited<ReturnType<typeof personValues>>;
  let find: ReturnType<typeof searcher>;
  let baseline: Awaited<ReturnType<typeof joinCounts>>;

  const exportAndLoad = async (name: string, flags: PipelineConfig) => {
    const dest = join(tmp.dir, name);
    const summary = await runExport(sandboxConfig(sb, dest, flags), { token: sb.tokens.full });
    expect(summary.status).toBe('ok');
    const db = join(tmp.dir, `${name}.duckdb`);
    await warehouseLoad({ dest, into: `duckdb:${db}`, tables: builtinTables() });
    return { dest, db, summary };
  };

  beforeAll(async () => {
    writeFileSync(keyFile, keyText + '\n');
    sb = await startSandbox({ seed: 12, schools: 3, achievementsPerSchool: 150 });
    values = await personValues(sb);
    find = searcher(values.needles);
    const plain = await exportAndLoad('plain', { format: 'ndjson' });
    baseline = await joinCounts(plain.db);
    // The search finds every kind of value in an export that keeps them, in files and warehouse alike.
    const inFiles = await destinationHits(plain.dest, find);
    const inWarehouse = await warehouseHits(plain.db, find);
    for (const hits of [inFiles.hits, inWarehouse.hits]) {
      expect(new Set(hits.map((h) => h.kind))).toEqual(new Set<Kind>(['name', 'upn', 'date of birth', 'comment', 'person id']));
    }
  });
  afterAll(async () => {
    await sb?.close();
    tmp.cleanup();
  });

  it('the baseline joins are not trivial', () => {
    expect(baseline.achievement_students).toBeGreaterThan(100);
    expect(baseline.students_results).toBeGreaterThan(100);
    expect(baseline.all_three).toBeGreaterThan(100);
    expect(baseline.person_deletions).toBeGreaterThan(0);
  });

  it.each(FORMATS)('$name: nothing personal in the destination or the warehouse, and the same join counts', async ({ name, flags }) => {
    const { dest, db, summary } = await exportAndLoad(name, { ...flags, personal_data: STRICT, pseudonymise_key_file: keyFile });
    const key = new PseudonymiseKey(Buffer.from(keyText));
    expect(summary.personalData).toMatchObject({ ...STRICT, key_id: key.id });

    const inFiles = await destinationHits(dest, find);
    // every built-in table, manifests, state and snapshot id lists were searched
    const dirs = new Set(inFiles.files.map((f) => f.split('/')[0]));
    for (const t of builtinTables()) expect(dirs).toContain(t.name);
    expect(inFiles.files.some((f) => f.startsWith('_manifests/'))).toBe(true);
    expect(inFiles.files.some((f) => /^_state\/region=[^/]+\/school_id=A\d+\.json$/.test(f))).toBe(true);
    expect(inFiles.files.some((f) => f.startsWith('_state/ids/'))).toBe(true);
    expect(inFiles.hits).toEqual([]);

    const inWarehouse = await warehouseHits(db, find);
    for (const t of builtinTables()) expect(inWarehouse.tables).toContain(t.name);
    expect(inWarehouse.hits).toEqual([]);

    // nor the key itself
    for (const f of inFiles.files) expect(readFileSync(join(dest, f)).includes(keyText), f).toBe(false);

    expect(await joinCounts(db)).toEqual(baseline);

    // the manifest names the policy, and ids are pseudonyms of the sandbox's ids under this key
    const manifests = readdirSync(join(dest, '_manifests')).filter((f) => f.endsWith('.json'));
    const manifest = JSON.parse(readFileSync(join(dest, '_manifests', manifests[0]!), 'utf8')) as Manifest;
    const { matched, ...applied } = manifest.personal_data!;
    expect(applied).toEqual({ ...STRICT, key_id: key.id });
    // each class with the columns it decided in this run
    expect(matched?.classes.free_text).toEqual(['achievements.comment', 'assessment_results.result']);
    expect(matched?.classes.person_id).toEqual(
      expect.arrayContaining(['achievement_students.id', 'assessment_results.student', 'school_acl.ids']),
    );
    const pseudo = createPseudonymiser(key);
    const inst = await DuckDBInstance.create(db);
    const conn = await inst.connect();
    try {
      const ids = (await conn.runAndReadAll(`SELECT DISTINCT id FROM achievement_students`)).getRows().map((r) => String(r[0]));
      expect(ids.every((id) => PSEUDONYM_RE.test(id))).toBe(true);
      const expected = new Set(values.studentIds.map(pseudo));
      expect(ids.filter((id) => !expected.has(id))).toEqual([]);
    } finally {
      conn.closeSync();
    }
  });
});
