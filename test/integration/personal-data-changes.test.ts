import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync, writeFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { runExport } from '../../src/pipeline/run.ts';
import { resolveRunConfig } from '../../src/config/resolve.ts';
import type { PipelineConfig } from '../../src/config/schema.ts';
import { builtinTables, warehouseLoad } from '../../src/warehouse/commands.ts';
import { selectResources } from '../../src/resources/index.ts';
import { tableSchemas } from '../../src/resources/index.ts';
import { createPseudonymiser, PseudonymiseKey, PSEUDONYM_RE } from '../../src/privacy/pseudonym.ts';
import type { Manifest, SchoolState } from '../../src/manifest/types.ts';
import type { TableSchema } from '../../src/table.ts';
import { sandboxConfig, tempDir } from './helpers.ts';
import { readRunManifest } from '../helpers/read-exports.ts';

/**
 * Issue 12 item 4 and policy changes: deletions and restorations of pseudonymised people still
 * apply in the warehouse merge, the ACL's ids join the other tables, and switching a policy on
 * re-reads everything so the warehouse's current state holds no value read before.
 */
const KEY_TEXT = 'changes test key: 0123456789abcdefghijklmnopqrstuvwxyz';
const STRICT: PipelineConfig['personal_data'] = { person_id: 'pseudonymise', direct_identifier: 'drop', free_text: 'drop' };

async function query(db: string, sql: string): Promise<unknown[][]> {
  const inst = await DuckDBInstance.create(db);
  const conn = await inst.connect();
  try {
    return (await conn.runAndReadAll(sql)).getRows();
  } finally {
    conn.closeSync();
  }
}

/**
 * The sandbox serves no /students list (the spec does not describe one), so this proxy adds it
 * from the sandbox's own data and passes everything else through: the pipeline then exports
 * students as a user's custom resource, with the sandbox's deletion records of type student.
 */
async function withStudents(sb: Sandbox): Promise<{ url: string; close: () => Promise<void> }> {
  let self = '';
  const server: Server = createServer((req, res) => {
    void (async () => {
      const m = /^\/v1\.0\/schools\/(A\d+)\/students(\?|$)/.exec(req.url ?? '');
      res.setHeader('content-type', 'application/json');
      if (m) {
        const data = sb.control.records(m[1]!, 'students');
        res.setHeader('date', sb.control.now().toUTCString());
        res.end(JSON.stringify({ data, meta: { pagination: { next: null, previous: null, more: false, per_page: data.length } } }));
        return;
      }
      const up = await fetch(sb.url + req.url, { headers: { authorization: String(req.headers.authorization) } });
      res.statusCode = up.status;
      res.setHeader('date', up.headers.get('date') ?? new Date().toUTCString());
      res.end((await up.text()).replaceAll(sb.url, self));
    })();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  self = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: self,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}

describe('personal data across runs', () => {
  let sb: Sandbox;
  const tmp = tempDir('pd-changes-');
  const keyFile = join(tmp.dir, 'key');
  const pseudo = createPseudonymiser(new PseudonymiseKey(Buffer.from(KEY_TEXT)));

  beforeAll(async () => {
    writeFileSync(keyFile, KEY_TEXT);
    sb = await startSandbox({ seed: 21, schools: 2, achievementsPerSchool: 80 });
  });
  afterAll(async () => {
    await sb?.close();
    tmp.cleanup();
  });

  it('deleting and restoring a pseudonymised student reaches the warehouse through the pseudonymised deletion record', async () => {
    const proxy = await withStudents(sb);
    try {
      const dest = join(tmp.dir, 'students');
      const db = join(tmp.dir, 'students.duckdb');
      const custom = [{ name: 'students', path: '/schools/{school_id}/students' }];
      const tables: TableSchema[] = selectResources(undefined, custom).flatMap((r) => tableSchemas(r));
      const cfg = resolveRunConfig(undefined, {
        api_url: proxy.url,
        domains: { 'api.sandbox.test': proxy.url },
        schools: ['A1001'],
        resources: ['students', 'deletions'],
        custom_resources: custom,
        dest,
        format: 'ndjson',
        progress: 'none',
        personal_data: STRICT,
        pseudonymise_key_file: keyFile,
      });
      const run = async () => {
        const s = await runExport(cfg, { token: sb.tokens.full });
        expect(s.failures).toEqual([]);
        await warehouseLoad({ dest, into: `duckdb:${db}`, tables });
      };
      const live = () => sb.control.records('A1001', 'students').map((s) => pseudo(String(s.id)));
      const warehouseIds = async () => (await query(db, `SELECT id FROM students ORDER BY id`)).map((r) => String(r[0]));

      await run();
      const before = await warehouseIds();
      expect(before).toEqual(live().sort());
      expect(before.every((id) => PSEUDONYM_RE.test(id))).toBe(true);
      const cols = (await query(db, `SELECT column_name FROM information_schema.columns WHERE table_name = 'students'`)).map((r) => r[0]);
      expect(cols).toContain('_extra');
      const extra = (await query(db, `SELECT DISTINCT _extra::VARCHAR FROM students`)).map((r) => String(r[0]));
      for (const e of extra)
        expect(Object.keys(JSON.parse(e) as object).sort()).toEqual([
          'created_at',
          'created_at__timezone',
          'mis_id',
          'updated_at',
          'updated_at__timezone',
          'year_group',
        ]);

      const victim = String(sb.control.records('A1001', 'students')[5]!.id);
      sb.control.remove('A1001', 'students', victim);
      await run();
      expect(await warehouseIds()).not.toContain(pseudo(victim));
      expect(await warehouseIds()).toEqual(live().sort());
      const del = await query(db, `SELECT type, id, "table", restored_at FROM deletions WHERE id = '${pseudo(victim)}'`);
      expect(del).toEqual([['student', pseudo(victim), 'students', null]]);

      sb.control.restore('A1001', 'students', victim);
      await run();
      expect(await warehouseIds()).toContain(pseudo(victim));
      expect(await warehouseIds()).toEqual(live().sort());
      const restored = await query(
        db,
        `SELECT count(*), count(restored_at) FROM deletions WHERE type = 'student' AND id = '${pseudo(victim)}'`,
      );
      expect(restored.map((r) => r.map(Number))).toEqual([[1, 1]]);
      // no raw id of a student anywhere in the warehouse's current tables
      for (const t of tables) {
        const text = JSON.stringify((await query(db, `SELECT t::VARCHAR FROM "${t.name}" t`)).map((r) => r[0]));
        expect(text.includes(victim), t.name).toBe(false);
      }
    } finally {
      await proxy.close();
    }
  });

  it('switching the policy on re-reads every resource in full, and the current state holds no value read before', async () => {
    const dest = join(tmp.dir, 'switch');
    const db = join(tmp.dir, 'switch.duckdb');
    const first = await runExport(sandboxConfig(sb, dest, { format: 'csv' }), { token: sb.tokens.full });
    expect(first.status).toBe('ok');
    await warehouseLoad({ dest, into: `duckdb:${db}`, tables: builtinTables() });
    const raw = (await query(db, `SELECT DISTINCT id FROM achievement_students`)).map((r) => String(r[0]));
    expect(raw.length).toBeGreaterThan(10);

    const second = await runExport(sandboxConfig(sb, dest, { format: 'csv', personal_data: STRICT, pseudonymise_key_file: keyFile }), {
      token: sb.tokens.full,
    });
    expect(second.status).toBe('ok');
    const manifest = readRunManifest(dest, second.runId) as Manifest;
    expect(manifest.tasks.length).toBeGreaterThan(0);
    expect(manifest.tasks.filter((t) => t.mode !== 'full').map((t) => `${t.school_id} ${t.resource}`)).toEqual([]);
    // a third run with the same policy is incremental again
    const third = await runExport(sandboxConfig(sb, dest, { format: 'csv', personal_data: STRICT, pseudonymise_key_file: keyFile }), {
      token: sb.tokens.full,
    });
    const m3 = readRunManifest(dest, third.runId) as Manifest;
    expect(m3.tasks.some((t) => t.mode === 'incremental')).toBe(true);

    await warehouseLoad({ dest, into: `duckdb:${db}`, tables: builtinTables() });
    const now = (await query(db, `SELECT DISTINCT id FROM achievement_students`)).map((r) => String(r[0]));
    expect(now.sort()).toEqual(raw.map(pseudo).sort());
    const comments = await query(db, `SELECT count(comment) FROM achievements`);
    expect(Number(comments[0]![0])).toBe(0);
    const names = sb.control.records('A1001', 'students').map((s) => String(s.surname));
    for (const t of builtinTables()) {
      const text = JSON.stringify((await query(db, `SELECT t::VARCHAR FROM "${t.name}" t`)).map((r) => r[0]));
      for (const id of raw) expect(text.includes(id), `${t.name} holds ${id}`).toBe(false);
      expect(text.includes(`"surname`), t.name).toBe(false);
      expect(
        names.some((n) => n.length > 4 && text.includes(n)),
        t.name,
      ).toBe(false);
    }
    // the snapshot id list was restarted with the policy: state names a list written by the switching run
    const state = JSON.parse(readFileSync(join(dest, '_state/region=uk/school_id=A1001.json'), 'utf8')) as SchoolState;
    const results = state.resources.assessment_results!;
    expect(results.personal_data).toMatch(/^[0-9a-f]{16}$/);
    expect(results.known_ids_file).toContain(second.runId);
    const listed = JSON.parse(gunzipSync(readFileSync(join(dest, results.known_ids_file!))).toString()) as string[];
    const written = (await query(db, `SELECT id FROM assessment_results WHERE _school_id = 'A1001'`)).map((r) => String(r[0]));
    expect(listed.sort()).toEqual(written.sort());
  });

  it("the ACL's pseudonymised ids join the people in the other tables", async () => {
    const dest = join(tmp.dir, 'acl');
    const db = join(tmp.dir, 'acl.duckdb');
    await runExport(sandboxConfig(sb, dest, { format: 'parquet', personal_data: STRICT, pseudonymise_key_file: keyFile }), {
      token: sb.tokens.full,
    });
    await warehouseLoad({ dest, into: `duckdb:${db}`, tables: builtinTables() });
    const acl = await query(db, `SELECT _school_id, ids FROM school_acl WHERE ids IS NOT NULL AND ids::VARCHAR <> '[]'`);
    expect(acl.length).toBeGreaterThan(0);
    const people = new Set(
      (
        await query(
          db,
          `SELECT _school_id || ' ' || id FROM achievement_students UNION SELECT _school_id || ' ' || student FROM assessment_results`,
        )
      ).map((r) => String(r[0])),
    );
    let joined = 0;
    for (const [school, ids] of acl) {
      for (const e of JSON.parse(String(ids)) as { id: string; type: string }[]) {
        expect(e.id).toMatch(PSEUDONYM_RE);
        if (e.type === 'student' && people.has(`${String(school)} ${e.id}`)) joined++;
      }
    }
    expect(joined).toBeGreaterThan(0);
  });
});
