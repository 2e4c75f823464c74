import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { compactDestination } from '../../src/compact/run.ts';
import { openSink } from '../../src/sink/index.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { builtinTables, warehouseLoad } from '../../src/warehouse/commands.ts';
import { startS3rver, type S3rverHandle } from '../helpers/s3rver.ts';
import { stubS3rverEnv } from '../helpers/s3rver-env.ts';
import { currentTables } from '../warehouse/tables.ts';
import { approvedSchools, canonical, expectedState, exportOnce, tempDir } from './helpers.ts';

/** `compact` on an S3 destination (s3rver on 127.0.0.1): the local cases are in compact.test.ts. */
const KNOWN_TABLES = builtinTables().map((t) => t.name);

describe('compact (S3 destination, s3rver)', () => {
  let sb: Sandbox;
  let store: S3rverHandle;
  const tmp = tempDir('compact-s3-');

  beforeAll(async () => {
    store = await startS3rver();
    sb = await startSandbox({ seed: 32, schools: 2, achievementsPerSchool: 20 });
  });
  beforeEach(() => {
    stubS3rverEnv();
  });
  afterAll(async () => {
    await sb?.close();
    await store?.close();
    tmp.cleanup();
  });

  it('compacts an export in a bucket; the warehouse equals the sandbox after, a load behind included', async () => {
    const dest = `s3://${store.bucket}/compact`;
    const s3 = { endpoint: store.endpoint };
    const list = await approvedSchools(sb);
    const schools = list.map((s) => s.id);
    const regionOf = (id: string) => list.find((s) => s.id === id)!.region;
    const run = async () =>
      expect((await exportOnce(sb, '', { dest, s3_endpoint: store.endpoint, format: 'parquet' })).failures).toEqual([]);
    await run();
    const behind = join(tmp.dir, 'behind.duckdb');
    await warehouseLoad({ dest, into: `duckdb:${behind}`, s3 });
    for (const s of schools) sb.control.add(s, 'achievements', 2);
    await run();
    await run();
    const sink = await openSink(dest, { s3, readOnly: true });
    try {
      const data = async () => (await sink.list('')).filter((p) => !p.startsWith('_'));
      const before = await data();
      const res = await compactDestination({ dest, s3, knownTables: KNOWN_TABLES });
      expect(res.problems).toBe(0);
      expect(res.filesWritten).toBeGreaterThan(0);
      const after = await data();
      expect(after.length).toBe(before.length - res.filesMerged + res.filesWritten);
      const dirs = new Map<string, number>();
      for (const p of after) dirs.set(p.slice(0, p.lastIndexOf('/')), (dirs.get(p.slice(0, p.lastIndexOf('/'))) ?? 0) + 1);
      expect([...dirs.values()].every((n) => n === 1)).toBe(true);
    } finally {
      await sink.close();
    }
    await warehouseLoad({ dest, into: `duckdb:${behind}`, s3 });
    const expected = await expectedState(sb, schools, regionOf);
    const actual = await currentTables(behind);
    for (const [table, rows] of expected)
      expect({ table, rows: canonical(actual.get(table) ?? []) }).toEqual({ table, rows: canonical(rows) });
  });
});
