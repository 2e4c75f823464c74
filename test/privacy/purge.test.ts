import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { DuckDBInstance } from '@duckdb/node-api';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { runExport } from '../../src/pipeline/run.ts';
import { openSink } from '../../src/sink/index.ts';
import type { Sink } from '../../src/sink/types.ts';
import type { Manifest } from '../../src/manifest/types.ts';
import { purgeSchool, redactManifests } from '../../src/webhooks/purge.ts';
import { builtinTables, warehouseLoad } from '../../src/warehouse/commands.ts';
import { sandboxConfig, tempDir } from '../integration/helpers.ts';

/**
 * Issue 12 item 6, exporter side: a purge after revoke leaves nothing of the school in any
 * table's files, its state, its snapshot id lists or the deletion records of run manifests,
 * and the destination still loads.
 */
const SCHOOL = 'A1001';

describe('purge covers everything the school appears in', () => {
  let sb: Sandbox;
  let sink: Sink;
  const tmp = tempDir('purge-');
  const dbDir = tempDir('purge-db-');
  const manifests = async () =>
    Promise.all(
      (await sink.list('_manifests/')).map(async (p) => ({ path: p, m: JSON.parse((await sink.read(p))!.toString()) as Manifest })),
    );

  beforeAll(async () => {
    sb = await startSandbox({ seed: 3, schools: 3, achievementsPerSchool: 60 });
    sink = await openSink(tmp.dir);
  });
  afterAll(async () => {
    await sink?.close();
    await sb?.close();
    tmp.cleanup();
    dbDir.cleanup();
  });

  it('removes every table file, the state file, the snapshot id lists and the manifests’ deletion records of the school', async () => {
    expect((await runExport(sandboxConfig(sb, tmp.dir, { format: 'ndjson', gzip: true }), { token: sb.tokens.full })).status).toBe('ok');
    // a student leaves, so the next run's manifest lists a deletion record naming a person of the school
    const student = String(sb.control.records(SCHOOL, 'students')[3]!.id);
    sb.control.remove(SCHOOL, 'students', student);
    expect((await runExport(sandboxConfig(sb, tmp.dir, { format: 'ndjson', gzip: true }), { token: sb.tokens.full })).status).toBe('ok');

    const before = await sink.list('');
    const ofSchool = (p: string) => p.split('/').some((s) => s === `school_id=${SCHOOL}` || s === `school_id=${SCHOOL}.json`);
    // the school appears in every built-in table, in its state and in snapshot id lists
    for (const t of builtinTables())
      expect(
        before.some((p) => p.startsWith(`${t.name}/`) && ofSchool(p)),
        t.name,
      ).toBe(true);
    expect(before.some((p) => p.startsWith('_state/region=') && ofSchool(p))).toBe(true);
    expect(before.some((p) => p.startsWith('_state/ids/') && ofSchool(p))).toBe(true);
    const withDeletions = (await manifests()).filter(({ m }) => (m.deletions ?? []).some((d) => d.school_id === SCHOOL));
    expect(withDeletions.length).toBe(2);
    expect(JSON.stringify(withDeletions.map((x) => x.m.deletions))).toContain(student);
    const othersDeletions = (await manifests()).flatMap(({ m }) => (m.deletions ?? []).filter((d) => d.school_id !== SCHOOL));
    expect(othersDeletions.length).toBeGreaterThan(0);
    const ids = [
      ...sb.control.records(SCHOOL, 'students').map((s) => String(s.id)),
      ...sb.control.records(SCHOOL, 'employees').map((s) => String(s.id)),
      student,
    ];

    const result = await purgeSchool(sink, SCHOOL, 'accessRevoked: test');

    const after = await sink.list('');
    expect(after.filter(ofSchool)).toEqual([]);
    expect(result.removed.sort()).toEqual(before.filter(ofSchool).sort());
    expect(after.filter((p) => !p.startsWith('_manifests/')).sort()).toEqual(
      before.filter((p) => !ofSchool(p) && !p.startsWith('_manifests/')).sort(),
    );
    expect(result.redacted.sort()).toEqual(withDeletions.map((x) => x.path).sort());
    expect(result.unreadable).toEqual([]);
    // nothing left outside the manifests names the school or one of its people
    for (const p of after.filter((x) => !x.startsWith('_manifests/'))) {
      let text = readFileSync(join(tmp.dir, p)).toString('utf8');
      if (p.endsWith('.gz')) text = gunzipSync(readFileSync(join(tmp.dir, p))).toString('utf8');
      expect(text.includes(SCHOOL), p).toBe(false);
      for (const id of ids) expect(text.includes(id), `${p} holds ${id}`).toBe(false);
    }
    // manifests keep their history (tasks) but no deletion record of the school; others' records stay
    const now = await manifests();
    for (const { m } of now) expect((m.deletions ?? []).filter((d) => d.school_id === SCHOOL)).toEqual([]);
    for (const { path, m } of now) for (const id of ids) expect(JSON.stringify(m).includes(id), `${path} holds ${id}`).toBe(false);
    expect(now.flatMap(({ m }) => m.deletions ?? [])).toEqual(othersDeletions);
    expect(now.find((x) => x.path === result.manifestPath)!.m.purged).toEqual([
      { school_id: SCHOOL, region: 'uk', reason: 'accessRevoked: test', files_removed: result.removed.length },
    ]);

    // the destination still loads, without the school
    const db = join(dbDir.dir, 'school.duckdb');
    await warehouseLoad({ dest: tmp.dir, into: `duckdb:${db}`, tables: builtinTables() });
    const inst = await DuckDBInstance.create(db);
    const conn = await inst.connect();
    try {
      for (const t of builtinTables()) {
        const rows = (await conn.runAndReadAll(`SELECT _school_id, count(*) FROM "${t.name}" GROUP BY 1 ORDER BY 1`)).getRows();
        expect(
          rows.map((r) => r[0]),
          t.name,
        ).not.toContain(SCHOOL);
      }
      const schools = (await conn.runAndReadAll(`SELECT count(DISTINCT _school_id) FROM achievements`)).getRows();
      expect(Number(schools[0]![0])).toBe(2);
    } finally {
      conn.closeSync();
    }
  });

  it('redacts manifest parts too, leaves manifests without the school untouched, and reports those it cannot read', async () => {
    const dir = tempDir('purge-parts-');
    const s = await openSink(dir.dir);
    try {
      const base = {
        version: 1 as const,
        run_id: '20260101T000000.000Z-aaaa',
        started_at: '',
        finished_at: '',
        format: 'ndjson' as const,
        tasks: [],
      };
      const del = (school_id: string, id: string) => ({
        school_id,
        type: 'student',
        id,
        deleted_at: null,
        restored_at: null,
        detected_by: 'api' as const,
      });
      const part: Manifest = { ...base, status: 'running', part: 1, deletions: [del('A1001', 'A100013'), del('A1002', 'A100023')] };
      const other: Manifest = { ...base, run_id: '20260102T000000.000Z-bbbb', status: 'ok', deletions: [del('A1002', 'A100024')] };
      await s.writeAtomic('_manifests/20260101T000000.000Z-aaaa/part-00001.json', JSON.stringify(part));
      await s.writeAtomic('_manifests/20260102T000000.000Z-bbbb.json', JSON.stringify(other));
      expect(await redactManifests(s, 'A1001')).toEqual({
        redacted: ['_manifests/20260101T000000.000Z-aaaa/part-00001.json'],
        unreadable: [],
      });
      const redacted = JSON.parse((await s.read('_manifests/20260101T000000.000Z-aaaa/part-00001.json'))!.toString()) as Manifest;
      expect(redacted).toEqual({ ...part, deletions: [del('A1002', 'A100023')] });
      expect((await s.read('_manifests/20260102T000000.000Z-bbbb.json'))!.toString()).toBe(JSON.stringify(other));

      await s.writeAtomic('_manifests/20260103T000000.000Z-cccc.json', '{ not json');
      expect(await redactManifests(s, 'A1001')).toEqual({ redacted: [], unreadable: ['_manifests/20260103T000000.000Z-cccc.json'] });
    } finally {
      await s.close();
      dir.cleanup();
    }
  });
});
