import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PipelineConfig } from '../../src/config/schema.ts';
import type { Manifest, ManifestTask, SchoolState } from '../../src/manifest/types.ts';
import { runExport } from '../../src/pipeline/run.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import type { Row } from '../../src/table.ts';
import { builtinTables, warehouseLoad } from '../../src/warehouse/commands.ts';
import { runStaticScript } from '../warehouse/fixtures.ts';
import { currentTables } from '../warehouse/tables.ts';
import { approvedSchools, canonical, expectedState, sandboxConfig, tempDir } from './helpers.ts';
import { readRunManifest } from '../helpers/read-exports.ts';

/**
 * Issue 19 item 1: a table read in full every run writes no file when its content equals the last
 * committed version for that school. The manifest says `unchanged` (with the content hash, the
 * read time and the run whose files hold it), state keeps the hash, and the warehouse still
 * equals the sandbox after every night.
 */
const ALWAYS_FULL = ['schools', 'school_meta', 'school_permissions', 'school_acl', 'achievement_attributes'];

/** Data files (not state, manifests or locks) under dest, relative. */
function dataFiles(dir: string, rel = ''): string[] {
  const out: string[] = [];
  for (const e of readdirSync(join(dir, rel), { withFileTypes: true })) {
    const p = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) {
      if (!p.startsWith('_')) out.push(...dataFiles(dir, p));
    } else out.push(p);
  }
  return out.sort();
}

describe('unchanged full reads write nothing', () => {
  let sb: Sandbox;
  const tmp = tempDir('unchanged-');
  const dest = join(tmp.dir, 'exports');
  const db = join(tmp.dir, 'warehouse.duckdb');
  const staticDb = join(tmp.dir, 'static.duckdb');
  let schools: { id: string; region: string }[] = [];
  // formatChange: the destination keeps its format unless the change is accepted (--format-change)
  const run = (extra: PipelineConfig = {}, accept: { formatChange?: boolean } = {}) =>
    runExport({ ...sandboxConfig(sb, dest, { format: 'parquet', ...extra }), ...accept }, { token: sb.tokens.full });
  const manifest = (runId: string) => readRunManifest(dest, runId) as Manifest;
  const state = (id: string) => {
    const region = schools.find((s) => s.id === id)!.region;
    return JSON.parse(readFileSync(join(dest, `_state/region=${region}/school_id=${id}.json`), 'utf8')) as SchoolState;
  };
  const byStatus = (m: Manifest, status: ManifestTask['status']) =>
    m.tasks
      .filter((t) => t.status === status)
      .map((t) => `${t.school_id} ${t.resource}`)
      .sort();

  /** `warehouse load`, and the static script (BigQuery / Snowflake, rendered for DuckDB) into its own file, both equal the sandbox. */
  async function expectWarehouseEqualsSandbox(): Promise<void> {
    await warehouseLoad({ dest, into: `duckdb:${db}` });
    await runStaticScript(dest, staticDb, builtinTables());
    const expected = await expectedState(
      sb,
      schools.map((s) => s.id),
      (id) => schools.find((s) => s.id === id)!.region,
    );
    for (const file of [db, staticDb]) {
      const actual = await currentTables(file);
      for (const [table, rows] of expected) {
        expect({ file, table, rows: canonical(actual.get(table) ?? ([] as Row[])) }).toEqual({ file, table, rows: canonical(rows) });
      }
    }
  }

  beforeAll(async () => {
    sb = await startSandbox({ seed: 31, schools: 3, achievementsPerSchool: 30 });
    schools = await approvedSchools(sb);
  });
  afterAll(async () => {
    await sb?.close();
    tmp.cleanup();
  });

  it('a second night with no change writes no data file; one change writes files for that school and table only', async () => {
    const first = await run();
    expect(first.status).toBe('ok');
    const m1 = manifest(first.runId);
    // every full read of the first night records its content hash, in the manifest and in state
    const acl = m1.tasks.find((t) => t.school_id === 'A1001' && t.resource === 'school_acl')!;
    expect(acl.content_sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(state('A1001').resources.school_acl!.content).toEqual({ sha256: acl.content_sha256, run_id: first.runId });
    await expectWarehouseEqualsSandbox();
    const filesAfterFirst = dataFiles(dest);

    const second = await run();
    expect(second.status).toBe('ok');
    expect(dataFiles(dest)).toEqual(filesAfterFirst);
    const m2 = manifest(second.runId);
    expect(m2.status).toBe('ok');
    expect(byStatus(m2, 'unchanged')).toEqual(schools.flatMap((s) => ALWAYS_FULL.map((r) => `${s.id} ${r}`)).sort());
    expect(second.tasks).toMatchObject({ committed: schools.length * 10, unchanged: schools.length * ALWAYS_FULL.length, failed: 0 });
    const unchanged = m2.tasks.find((t) => t.school_id === 'A1001' && t.resource === 'school_acl')!;
    expect(unchanged).toEqual({
      school_id: 'A1001',
      region: 'uk',
      resource: 'school_acl',
      status: 'unchanged',
      mode: 'full',
      files: [],
      rows: {},
      watermark: expect.any(String),
      content_sha256: acl.content_sha256,
      read_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      unchanged_since: first.runId,
    });
    // state: the hash and the run holding its files stay; the watermark and last full read advance
    const s2 = state('A1001').resources.school_acl!;
    expect(s2.content).toEqual({ sha256: acl.content_sha256, run_id: first.runId });
    expect(s2.last_run_id).toBe(second.runId);
    expect(s2.last_full_at).toBe(unchanged.read_at);
    expect(m2.tasks.every((t) => t.files.length === 0)).toBe(true);
    await expectWarehouseEqualsSandbox();

    // One attribute of one school changes: that (school, table) is written, nothing else.
    const attr = sb.control.records('A1002', 'achievement_attributes')[0] as { id: string };
    sb.control.update('A1002', 'achievement_attributes', attr.id, { description: 'renamed by the test' });
    const third = await run();
    const added = dataFiles(dest).filter((f) => !filesAfterFirst.includes(f));
    expect(added.length).toBeGreaterThan(0);
    expect(added.every((f) => f.startsWith('achievement_attributes/region=apac/school_id=A1002/'))).toBe(true);
    const m3 = manifest(third.runId);
    const changed = m3.tasks.find((t) => t.school_id === 'A1002' && t.resource === 'achievement_attributes')!;
    expect(changed.status).toBe('committed');
    expect(changed.content_sha256).not.toBe(acl.content_sha256);
    expect(state('A1002').resources.achievement_attributes!.content).toEqual({ sha256: changed.content_sha256, run_id: third.runId });
    expect(byStatus(m3, 'unchanged')).toHaveLength(schools.length * ALWAYS_FULL.length - 1);
    await expectWarehouseEqualsSandbox();
  }, 120_000);

  it('another format, or another personal-data policy, writes its files even when the content is the same', async () => {
    const before = dataFiles(dest);
    const csv = await run({ format: 'csv' }, { formatChange: true });
    const m = manifest(csv.runId);
    expect(byStatus(m, 'unchanged')).toEqual([]);
    const aclFiles = dataFiles(dest).filter((f) => !before.includes(f) && f.startsWith('school_acl/'));
    expect(aclFiles).toHaveLength(schools.length);
    expect(aclFiles.every((f) => f.endsWith('.csv'))).toBe(true);
    // the same again in CSV is unchanged
    const again = await run({ format: 'csv' });
    expect(byStatus(manifest(again.runId), 'unchanged')).toHaveLength(schools.length * ALWAYS_FULL.length);

    const keyFile = join(tmp.dir, 'pseudonymise.key');
    writeFileSync(keyFile, 'unchanged test key: 0123456789abcdefghijklmnopqrstuvwxyz');
    const policy = { personal_data: { person_id: 'pseudonymise' as const }, pseudonymise_key_file: keyFile, format: 'csv' as const };
    const strict = await run(policy);
    expect(strict.status).toBe('ok');
    expect(byStatus(manifest(strict.runId), 'unchanged')).toEqual([]);
    const later = await run(policy);
    expect(byStatus(manifest(later.runId), 'unchanged')).toHaveLength(schools.length * ALWAYS_FULL.length);
  }, 120_000);
});

describe('unchanged snapshots of tables without deletion records, reads in pieces, and deletion records', () => {
  let sb: Sandbox;
  const tmp = tempDir('unchanged-snap-');
  const dest = join(tmp.dir, 'exports');
  const HOUR = 3600_000;
  const run = (later: number, extra: PipelineConfig = {}) =>
    runExport(sandboxConfig(sb, dest, { format: 'ndjson', schools: ['A1001'], ...extra }), {
      token: sb.tokens.full,
      now: () => new Date(Date.now() + later * HOUR),
    });
  const manifest = (runId: string) => readRunManifest(dest, runId) as Manifest;
  const task = (runId: string, resource: string) => manifest(runId).tasks.filter((t) => t.resource === resource);
  const state = () => JSON.parse(readFileSync(join(dest, '_state/region=uk/school_id=A1001.json'), 'utf8')) as SchoolState;

  beforeAll(async () => {
    sb = await startSandbox({ seed: 32, schools: 1, achievementsPerSchool: 30 });
  });
  afterAll(async () => {
    await sb?.close();
    tmp.cleanup();
  });

  it('a due snapshot that finds the same rows keeps its id list and writes nothing; one that lost a row writes it', async () => {
    const resources = ['assessment_results'];
    const first = await run(0, { resources });
    const ids = state().resources.assessment_results!.known_ids_file!;
    expect(ids).toBeDefined();
    // a week later the snapshot is due: same rows, so no file, no deletion, the same baseline
    const due = await run(200, { resources });
    const [t] = task(due.runId, 'assessment_results');
    expect(t).toMatchObject({ status: 'unchanged', mode: 'full', files: [], unchanged_since: first.runId });
    expect(manifest(due.runId).deletions).toEqual([]);
    expect(state().resources.assessment_results).toMatchObject({ known_ids_file: ids, content: { run_id: first.runId } });
    expect(readdirSync(join(dest, '_state/ids/region=uk/school_id=A1001'))).toHaveLength(1);
    // a row disappears (no deletion record for this table): the next due snapshot writes files and finds it gone
    const gone = (sb.control.records('A1001', 'assessment_results')[3] as { id: string }).id;
    sb.control.remove('A1001', 'assessment_results', gone);
    const later = await run(400, { resources });
    const [u] = task(later.runId, 'assessment_results');
    expect(u!.status).toBe('committed');
    expect(u!.files.length).toBeGreaterThan(0);
    expect(manifest(later.runId).deletions).toEqual([expect.objectContaining({ id: gone, detected_by: 'snapshot' })]);
    expect(state().resources.assessment_results!.content).toEqual({ sha256: u!.content_sha256, run_id: later.runId });
  }, 60_000);

  it('a full read committed in checkpoint pieces keeps no hash; one read in one piece records it', async () => {
    const resources = ['achievement_attributes'];
    const pieces = await run(0, { resources, per_page: 4, checkpoint_pages: 1 });
    const parts = task(pieces.runId, 'achievement_attributes');
    expect(parts.length).toBeGreaterThan(1);
    expect(parts.every((p) => p.content_sha256 === undefined)).toBe(true);
    expect(state().resources.achievement_attributes!.content).toBeUndefined();
    // read again in one piece: the hash is recorded, and the next full read with the same rows writes nothing
    const whole = await run(0, { resources });
    const [w] = task(whole.runId, 'achievement_attributes');
    expect(w).toMatchObject({ status: 'committed', content_sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(state().resources.achievement_attributes!.content).toEqual({ sha256: w!.content_sha256, run_id: whole.runId });
    const again = await run(0, { resources });
    expect(task(again.runId, 'achievement_attributes')[0]).toMatchObject({ status: 'unchanged', unchanged_since: whole.runId });
  }, 60_000);

  it('an incremental table with deletion records hashes none of its full reads; deletion records from the API drop a hash it holds', async () => {
    // its full reads come back only when forced, and its first incremental read that writes rows
    // would drop the hash: its largest reads are not hashed for nothing
    const whole = await run(0, { resources: ['achievements', 'deletions'], full_refresh: true });
    const [w] = task(whole.runId, 'achievements');
    expect(w!.status).toBe('committed');
    expect(w!.content_sha256).toBeUndefined();
    expect(state().resources.achievements!.content).toBeUndefined();
    // a hash recorded by an earlier version: an achievement deleted upstream, the deletions task records it, and the hash goes
    const path = join(dest, '_state/region=uk/school_id=A1001.json');
    const s = state();
    s.resources.achievements!.content = { sha256: 'f'.repeat(64), run_id: whole.runId };
    writeFileSync(path, JSON.stringify(s));
    const victim = (sb.control.records('A1001', 'achievements')[5] as { id: string }).id;
    sb.control.remove('A1001', 'achievements', victim);
    const next = await run(0, { resources: ['achievements', 'deletions'] });
    expect(manifest(next.runId).deletions).toEqual([expect.objectContaining({ id: victim, detected_by: 'api' })]);
    expect(state().resources.achievements!.content).toBeUndefined();
  }, 60_000);
});
