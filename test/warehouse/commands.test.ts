import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSink } from '../../src/sink/index.ts';
import { compactManifests, warehouseLoad, warehouseSql } from '../../src/warehouse/commands.ts';
import { S3RVER_CREDENTIALS, startS3rver, type S3rverHandle } from '../helpers/s3rver.ts';
import { dirSource, dump, runStaticScript, SCHEMAS, writeRun } from './fixtures.ts';

const R1 = '20240101T000000Z-0001';
const R2 = '20240201T000000Z-0002';
const row = (id: string, points: number, updated: string) => ({
  id,
  points,
  updated_at: `${updated}T00:00:00.000000Z`,
  updated_at__timezone: 'UTC',
});

let dir: string;
let store: S3rverHandle;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'wh-cmd-'));
  await writeRun(join(dir, 'export'), R1, 'parquet', [
    {
      school: 'A1',
      resource: 'achievements',
      mode: 'full',
      tables: {
        achievements: [row('A10', 1, '2024-01-01'), row('A11', 1, '2024-01-01')],
        achievement_students: [{ achievement_id: 'A10', id: 'A900' }],
      },
    },
  ]);
  await writeRun(join(dir, 'export'), R2, 'parquet', [
    { school: 'A1', resource: 'achievements', mode: 'full', tables: { achievements: [row('A10', 2, '2024-02-01')] } },
  ]);
  store = await startS3rver();
});
afterAll(async () => {
  await store?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('warehouse commands', () => {
  it('warehouse load from s3:// downloads the manifest-listed files through the S3 sink', async () => {
    const s3 = { endpoint: store.endpoint, credentials: S3RVER_CREDENTIALS };
    const sink = await openSink(`s3://${store.bucket}/exports`, { s3 });
    const local = dirSource(join(dir, 'export'), { local: true });
    for (const rel of await local.list('')) await sink.writeAtomic(rel, await readFile(join(dir, 'export', rel)));
    await sink.close();

    const dbPath = join(dir, 's3.duckdb');
    const progress: string[] = [];
    const r = await warehouseLoad({
      dest: `s3://${store.bucket}/exports`,
      into: `duckdb:${dbPath}`,
      s3,
      tables: SCHEMAS,
      onProgress: (m) => progress.push(m),
    });
    expect(r.appliedRuns).toEqual([R1, R2]);
    expect(await dump(dbPath, 'SELECT id, points, _run_id FROM achievements')).toEqual([{ id: 'A10', points: '2', _run_id: R2 }]);
    expect(r.tables.achievement_students).toBe(0); // run 2 sent A10 without students
    expect(progress).toContain(`applying run ${R1}`);
  });

  it('warehouse sql renders a static script: the same text whatever has been exported or loaded', () => {
    const render = () => warehouseSql({ dialect: 'snowflake', location: 's3://bucket/exports', tables: SCHEMAS });
    const sql = render();
    expect(sql).toContain('@school_export_stage/_manifests/');
    expect(sql).not.toContain(R1);
    expect(sql).toBe(render());
    const bq = warehouseSql({ dialect: 'bigquery', location: 'gs://bucket/exports', tables: SCHEMAS });
    expect(bq).toContain("uris = ['gs://bucket/exports/_manifests/*']");
  });

  it('rewrites the indented manifests of older exports on one line, which the static script needs', async () => {
    const old = join(dir, 'old-export');
    await writeRun(old, R1, 'parquet', [
      { school: 'A1', resource: 'achievements', mode: 'full', tables: { achievements: [row('A10', 1, '2024-01-01')] } },
    ]);
    const path = join(old, '_manifests', `${R1}.json`);
    const manifest = JSON.parse(await readFile(path, 'utf8')) as unknown;
    await writeFile(path, JSON.stringify(manifest, null, 1) + '\n');
    await expect(runStaticScript(old, join(dir, 'old.duckdb'))).rejects.toThrow(/JSON/);
    expect(await compactManifests({ dest: old })).toBe(1);
    expect(JSON.parse(await readFile(path, 'utf8'))).toEqual(manifest);
    expect(await compactManifests({ dest: old })).toBe(0);
    await runStaticScript(old, join(dir, 'new.duckdb'));
    expect(await dump(join(dir, 'new.duckdb'), 'SELECT id FROM achievements')).toEqual([{ id: 'A10' }]);
  });

  it('refuses a bad --into and a --dest that is not an export', async () => {
    await expect(warehouseLoad({ dest: join(dir, 'export'), into: 'sqlite:x.db', tables: SCHEMAS })).rejects.toMatchObject({
      code: 'E_CONFIG',
    });
    await expect(
      warehouseLoad({ dest: join(dir, 'nope'), into: `duckdb:${join(dir, 'x.duckdb')}`, tables: SCHEMAS }),
    ).rejects.toMatchObject({ code: 'E_CONFIG' });
    await expect(
      warehouseLoad({ dest: join(dir, 'export'), into: `duckdb:${join(dir, 'no-such-dir', 'x.duckdb')}`, tables: SCHEMAS }),
    ).rejects.toMatchObject({
      code: 'E_CONFIG',
      message: expect.stringContaining('cannot open the DuckDB database'),
    });
  });
});
