import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PipelineConfig } from '../../src/config/schema.ts';
import type { Manifest, SchoolState } from '../../src/manifest/types.ts';
import { runExport } from '../../src/pipeline/run.ts';
import { runIdOfDataFile } from '../../src/privacy/tighten.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { openSink } from '../../src/sink/index.ts';
import { collectStatus } from '../../src/status/collect.ts';
import { builtinTables, warehouseLoad } from '../../src/warehouse/commands.ts';
import { warehouseState, readRunManifest } from '../helpers/read-exports.ts';
import { runStaticScript } from '../warehouse/fixtures.ts';
import { canonical, expectedState, sandboxConfig, tempDir } from './helpers.ts';

/**
 * Issue 22 item 3: when the policy becomes stricter, the files written under the weaker one are
 * deleted once replaced and the warehouse drops their rows, `_raw_` history included; item 4:
 * loaders handle a destination whose format changed.
 */
const KEY = 'tightening test key: 0123456789abcdefghijklmnopqrstuvwxyz';
const STRICT: PipelineConfig['personal_data'] = { person_id: 'pseudonymise', direct_identifier: 'drop', free_text: 'drop' };

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(d, e.name));
      else out.push(relative(dir, join(d, e.name)));
    }
  };
  if (existsSync(dir)) walk(dir);
  return out;
}

/** Every row of every current-state and `_raw_` table, as text. */
async function warehouseText(db: string): Promise<Record<string, string>> {
  const inst = await DuckDBInstance.create(db);
  const conn = await inst.connect();
  try {
    const tables = (
      await conn.runAndReadAll(
        `SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' AND table_name NOT LIKE '\\_se\\_%' ESCAPE '\\'`,
      )
    )
      .getRows()
      .map((r) => String(r[0]))
      .filter((t) => !t.startsWith('_school_export'));
    const out: Record<string, string> = {};
    for (const t of tables) out[t] = JSON.stringify((await conn.runAndReadAll(`SELECT t::VARCHAR FROM "${t}" t`)).getRows());
    return out;
  } finally {
    conn.closeSync();
    inst.closeSync();
  }
}

describe('tightening the personal-data policy leaves nothing behind', () => {
  let sb: Sandbox;
  const tmp = tempDir('policy-tight-');
  const keyFile = join(tmp.dir, 'key');

  beforeAll(async () => {
    writeFileSync(keyFile, KEY);
    sb = await startSandbox({ seed: 43, schools: 2, achievementsPerSchool: 40 });
  });
  afterAll(async () => {
    await sb?.close();
    tmp.cleanup();
  });

  /** Values the strict policy never writes: ids and names of the students and employees in achievements, and comments. */
  function rawValues(): string[] {
    const out = new Set<string>();
    for (const school of ['A1001', 'A1002']) {
      for (const a of sb.control.records(school, 'achievements')) {
        if (typeof a.comment === 'string' && a.comment.length > 12) out.add(a.comment);
        for (const inc of ['students', 'employees']) {
          for (const p of ((a[inc] as { data?: Record<string, unknown>[] } | undefined)?.data ?? []) as Record<string, unknown>[]) {
            out.add(String(p.id));
            if (typeof p.surname === 'string' && p.surname.length > 4) out.add(p.surname);
          }
        }
      }
    }
    return [...out];
  }

  it('the files of the weaker policy go once replaced, and the warehouse (current and _raw_ tables) holds no value from before', async () => {
    const dest = join(tmp.dir, 'exports');
    const db = { load: join(tmp.dir, 'load.duckdb'), script: join(tmp.dir, 'script.duckdb'), late: join(tmp.dir, 'late.duckdb') };
    const cfg = (extra: PipelineConfig = {}) => sandboxConfig(sb, dest, { format: 'parquet', ...extra });
    const first = await runExport(cfg(), { token: sb.tokens.full });
    expect(first.status).toBe('ok');
    // a second weak run: history rows of two runs in the raw tables
    sb.control.update('A1001', 'achievements', String(sb.control.records('A1001', 'achievements')[0]!.id));
    const second = await runExport(cfg(), { token: sb.tokens.full });
    expect(second.status).toBe('ok');
    await warehouseLoad({ dest, into: `duckdb:${db.load}`, tables: builtinTables() });
    await runStaticScript(dest, db.script, builtinTables());
    const raw = rawValues();
    expect(raw.length).toBeGreaterThan(50);
    for (const d of [db.load, db.script]) {
      const text = Object.values(await warehouseText(d)).join('\n');
      // the check below can fail: the weak runs did put these values in the warehouse
      expect(raw.filter((v) => text.includes(v)).length).toBeGreaterThan(raw.length / 2);
    }

    const strict = await runExport(cfg({ personal_data: STRICT, pseudonymise_key_file: keyFile }), { token: sb.tokens.full });
    expect(strict.status).toBe('ok');
    expect(strict.notes.join('\n')).toMatch(/\d+ file\(s\) written under a weaker personal-data policy deleted at 2 school\(s\)/);

    // the destination: every data file and id list is the strict run's; the purge is recorded
    for (const f of filesUnder(dest)) {
      // the run manifests and the destination's own records (policy, scope naming) hold no data
      if (f.startsWith('_manifests/') || f.startsWith('_state/region=') || /^_state\/_[^/]+\.json$/.test(f)) continue;
      const run = f.startsWith('_state/ids/') ? f : runIdOfDataFile(f);
      expect(run, f).toBeDefined();
      if (!run) continue;
      expect(run.includes(first.runId) || run.includes(second.runId), f).toBe(false);
    }
    const purge = readdirSync(join(dest, '_manifests')).filter((n) => n.includes('-purge-'));
    expect(purge).toHaveLength(1);
    const pm = JSON.parse(readFileSync(join(dest, '_manifests', purge[0]!), 'utf8')) as Manifest;
    expect(pm.purged!.map((p) => [p.school_id, p.before_run])).toEqual([
      ['A1001', strict.runId],
      ['A1002', strict.runId],
    ]);
    for (const r of [first, second]) {
      const m = readRunManifest(dest, r.runId) as Manifest;
      expect(m.deletions).toEqual([]); // deletion records of the weak runs are redacted
    }
    for (const s of ['A1001', 'A1002']) {
      const region = pm.purged!.find((p) => p.school_id === s)!.region;
      const state = JSON.parse(readFileSync(join(dest, `_state/region=${region}/school_id=${s}.json`), 'utf8')) as SchoolState;
      expect(Object.values(state.resources).filter((r) => r.purge_before !== undefined)).toEqual([]);
    }

    // the warehouses loaded before, loaded again, and one loaded only now, hold none of it
    await warehouseLoad({ dest, into: `duckdb:${db.load}`, tables: builtinTables() });
    await runStaticScript(dest, db.script, builtinTables());
    await warehouseLoad({ dest, into: `duckdb:${db.late}`, tables: builtinTables() });
    for (const d of Object.values(db)) {
      const tables = await warehouseText(d);
      expect(Object.keys(tables)).toEqual(
        expect.arrayContaining(['_raw_achievement_students', '_raw_achievements', 'achievement_students']),
      );
      for (const [t, text] of Object.entries(tables)) expect(raw.filter((v) => text.includes(v)).slice(0, 3), `${d} ${t}`).toEqual([]);
      const inst = await DuckDBInstance.create(d);
      const conn = await inst.connect();
      const n = Number((await conn.runAndReadAll('SELECT count(*) FROM achievements')).getRows()[0]![0]);
      conn.closeSync();
      inst.closeSync();
      expect(n, d).toBe(80); // every achievement is still there, transformed
    }
    const sink = await openSink(dest, { readOnly: true });
    try {
      expect((await collectStatus(sink)).personal_data).toMatchObject({ weaker_schools: [], weaker_resources: 0, awaiting_purge: 0 });
    } finally {
      await sink.close();
    }
  });

  it('a school whose resource was not read again keeps its files, status says so, and a later run purges it', async () => {
    const dest = join(tmp.dir, 'waiting');
    const cfg = (extra: PipelineConfig = {}) => sandboxConfig(sb, dest, { format: 'ndjson', max_retries: 0, ...extra });
    const first = await runExport(cfg(), { token: sb.tokens.full });
    expect(first.status).toBe('ok');
    sb.control.fault({ kind: '500', times: 100, path: '/schools/A1002/achievements?' });
    const strict = { personal_data: STRICT, pseudonymise_key_file: keyFile };
    const partial = await runExport(cfg(strict), { token: sb.tokens.full });
    sb.control.clearFaults();
    expect(partial.failures.map((f) => `${f.school_id} ${f.resource}`)).toEqual(['A1002 achievements']);
    expect(partial.notes.join('\n')).toMatch(/deleted at 1 school\(s\)/);
    expect(partial.notes.join('\n')).toMatch(/1 school\(s\) still hold files written under a weaker personal-data policy .*\(A1002\)/);
    const schoolFiles = (s: string) => filesUnder(dest).filter((f) => f.includes(`/school_id=${s}/`) && !f.startsWith('_state/'));
    expect(schoolFiles('A1001').some((f) => f.includes(first.runId))).toBe(false);
    expect(schoolFiles('A1002').filter((f) => f.includes(first.runId)).length).toBeGreaterThan(5);

    const sink = await openSink(dest, { readOnly: true });
    try {
      const st = await collectStatus(sink);
      expect(st.personal_data).toMatchObject({ weaker_schools: ['A1002'], weaker_resources: 1, awaiting_purge: 0 });
      const { renderStatus } = await import('../../src/status/render.ts');
      expect(renderStatus(st)).toContain(
        'STILL HOLDS DATA WRITTEN UNDER A WEAKER PERSONAL-DATA POLICY at 1 school(s) (A1002): 1 resource(s) not read again yet',
      );

      const after = await runExport(cfg(strict), { token: sb.tokens.full });
      expect(after.status).toBe('ok');
      expect(after.notes.join('\n')).toMatch(/deleted at 1 school\(s\)/);
      expect(schoolFiles('A1002').some((f) => f.includes(first.runId))).toBe(false);
      // what the partial run wrote under the strict policy stays
      expect(schoolFiles('A1002').some((f) => f.includes(partial.runId))).toBe(true);
      expect((await collectStatus(sink)).personal_data).toMatchObject({ weaker_schools: [], weaker_resources: 0, awaiting_purge: 0 });
    } finally {
      await sink.close();
    }
  });

  it("a run stopped after a school's reads committed leaves the duty in its state; the next run purges", async () => {
    const dest = join(tmp.dir, 'stopped');
    const cfg = (extra: PipelineConfig = {}) => sandboxConfig(sb, dest, { format: 'ndjson', concurrency: 1, ...extra });
    const first = await runExport(cfg(), { token: sb.tokens.full });
    expect(first.status).toBe('ok');
    // tasks run in school order, one at a time: when A1002's achievements are asked for, A1001 is done
    const stop = new AbortController();
    const held = sb.control.hold({ school: 'A1002', resource: 'achievements' }); // a task's request, not the plan's probe
    const strict = { personal_data: STRICT, pseudonymise_key_file: keyFile };
    const stopped = runExport(cfg(strict), { token: sb.tokens.full, signal: stop.signal });
    await held.reached;
    stop.abort();
    held.release();
    expect((await stopped).status).toBe('interrupted');
    const a1001 = () => filesUnder(dest).filter((f) => f.includes('/school_id=A1001/') && !f.startsWith('_state/'));
    expect(a1001().some((f) => f.includes(first.runId))).toBe(true); // an interrupted run purges nothing
    const state = JSON.parse(readFileSync(join(dest, '_state/region=uk/school_id=A1001.json'), 'utf8')) as SchoolState;
    expect(Object.values(state.resources).every((r) => r.purge_before !== undefined)).toBe(true);
    const sink = await openSink(dest, { readOnly: true });
    try {
      expect((await collectStatus(sink)).personal_data?.weaker_schools).toContain('A1001');
    } finally {
      await sink.close();
    }

    // the next run reads A1001 incrementally: the marks its commits carry bring the purge
    const next = await runExport(cfg(strict), { token: sb.tokens.full });
    expect(next.status).toBe('ok');
    expect(next.notes.join('\n')).toMatch(/deleted at 2 school\(s\)/);
    expect(a1001().some((f) => f.includes(first.runId))).toBe(false);
  });

  it('loaders handle a destination whose format changed (ndjson, then csv, then parquet)', async () => {
    const dest = join(tmp.dir, 'mixed');
    const cfg = (format: 'ndjson' | 'csv' | 'parquet') => ({ ...sandboxConfig(sb, dest, { format }), formatChange: true });
    expect((await runExport(cfg('ndjson'), { token: sb.tokens.full })).status).toBe('ok');
    const ids = sb.control.records('A1001', 'achievements').map((a) => String(a.id));
    sb.control.update('A1001', 'achievements', ids[1]!, { points: 7 });
    sb.control.remove('A1001', 'achievements', ids[2]!);
    expect((await runExport(cfg('csv'), { token: sb.tokens.full })).status).toBe('ok');
    sb.control.update('A1002', 'achievements', String(sb.control.records('A1002', 'achievements')[3]!.id), { points: 9 });
    sb.control.add('A1001', 'achievements', 2);
    expect((await runExport(cfg('parquet'), { token: sb.tokens.full })).status).toBe('ok');
    const exts = new Set(filesUnder(join(dest, 'achievements')).map((f) => f.split('.').pop()!));
    expect([...exts].sort()).toEqual(['csv', 'ndjson', 'parquet']);

    const regionOf = (id: string) =>
      id === 'A1001'
        ? 'uk'
        : filesUnder(dest)
            .find((f) => f.includes(`school_id=${id}`))!
            .split('region=')[1]!
            .split('/')[0]!;
    const expected = await expectedState(sb, ['A1001', 'A1002'], regionOf);
    const warehouse = await warehouseState(dest, join(tmp.dir, 'mixed.duckdb'));
    for (const [table, rows] of expected)
      expect({ table, rows: canonical(warehouse.get(table) ?? []) }).toEqual({ table, rows: canonical(rows) });
    // the static BigQuery / Snowflake logic reads Parquet only, and says so instead of loading part of it
    await expect(runStaticScript(dest, join(tmp.dir, 'mixed-script.duckdb'), builtinTables())).rejects.toThrow(/this load reads Parquet/);
  });
});
