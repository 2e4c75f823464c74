import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runExport } from '../../src/pipeline/run.ts';
import { shardOf } from '../../src/pipeline/shard.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import type { Row } from '../../src/table.ts';
import { warehouseLoad } from '../../src/warehouse/commands.ts';
import { startGateProxy, type GateProxy } from '../warehouse/gate-proxy.ts';
import { runKilledAt } from '../warehouse/killed-run.ts';
import { runStaticScript } from '../warehouse/fixtures.ts';
import { currentTables } from '../warehouse/tables.ts';
import { builtinTables } from '../../src/warehouse/commands.ts';
import { approvedSchools, canonical, expectedState, sandboxConfig, tempDir } from './helpers.ts';

/**
 * The BigQuery / Snowflake nightly procedure, end to end: two shards where the first shard
 * (the lower run id) finishes last, a killed run's parts in between, and the static load script
 * (rendered in the DuckDB dialect, run in DuckDB) after each of them. The old procedure
 * ("render with --after MAX(run_id)") never loaded shard 0's remaining tasks here.
 */
const N = 2;
const ACHIEVEMENT_PAGE_2 = /^\/v1\.0\/schools\/(A\d+)\/achievements\?.*\b(cursor|page)=/;

describe('nightly warehouse procedure with shards, a late shard and a killed run', () => {
  let sb: Sandbox;
  const tmp = tempDir('wh-shards-');
  const dest = join(tmp.dir, 'exports');
  const db = join(tmp.dir, 'warehouse.duckdb');
  let schools: { id: string; region: string }[] = [];

  beforeAll(async () => {
    sb = await startSandbox({ seed: 23, schools: 6, achievementsPerSchool: 120 });
    schools = await approvedSchools(sb);
  });
  afterAll(async () => {
    await sb?.close();
    tmp.cleanup();
  });

  const config = (shard: number, extra: Record<string, unknown> = {}, via?: GateProxy) => {
    // Through the proxy: the same sandbox, reached at the proxy's URLs.
    const target = via
      ? { ...sb, url: via.map[sb.url]!, domains: Object.fromEntries(Object.entries(sb.domains).map(([d, u]) => [d, via.map[u]!])) }
      : sb;
    return sandboxConfig(target, dest, { format: 'parquet', per_page: 50, concurrency: 1, shard: `${shard}/${N}`, ...extra });
  };
  const manifests = () => (existsSync(join(dest, '_manifests')) ? readdirSync(join(dest, '_manifests')) : []);
  const load = () => runStaticScript(dest, db, builtinTables());

  /** The warehouse holds exactly the sandbox's data for these schools (and no other school's rows). */
  async function expectWarehouseEquals(ids: string[]): Promise<void> {
    const regionOf = (id: string) => schools.find((s) => s.id === id)!.region;
    const expected = await expectedState(sb, ids, regionOf);
    const actual = await currentTables(db);
    for (const [table, rows] of expected) {
      const got = (actual.get(table) ?? []).filter((r: Row) => ids.includes(String(r._school_id)));
      expect({ table, rows: canonical(got) }).toEqual({ table, rows: canonical(rows) });
    }
  }

  it('loads after each shard and after a killed run, and ends equal to the sandbox', async () => {
    const shard0 = schools.filter((s) => shardOf(s.id, N) === 0).map((s) => s.id);
    const shard1 = schools.filter((s) => shardOf(s.id, N) === 1).map((s) => s.id);
    expect(shard0.length).toBeGreaterThan(0);
    expect(shard1.length).toBeGreaterThan(0);

    // Shard 0 starts first and stops at page 2 of a school's achievements: its earlier tasks are
    // committed (parts), the rest is not.
    const gate0 = await startGateProxy([sb.url, ...Object.values(sb.domains)], (p) => ACHIEVEMENT_PAGE_2.test(p));
    const run0 = runExport(config(0, {}, gate0), { token: sb.tokens.full });
    try {
      await gate0.reached;
      // Shard 1 starts later and finishes first; the nightly load runs.
      const s1 = await runExport(config(1), { token: sb.tokens.full });
      expect(s1.failures).toEqual([]);
      await load();
      await expectWarehouseEquals(shard1);
      const run0Id = manifests().find((m) => m.endsWith(`-s0of${N}`))!;
      expect(run0Id < s1.runId).toBe(true);
      const loaded0 = (await currentTables(db)).get('schools')!.filter((r) => shard0.includes(String(r._school_id)));
      expect(loaded0.length).toBeGreaterThan(0); // shard 0's committed parts are loaded already

      // Changes upstream, then a full run of shard 1 killed at a known page.
      const [a, b] = shard1;
      const ach = sb.control.records(a!, 'achievements').map((r) => (r as { id: string }).id);
      sb.control.update(a!, 'achievements', ach[3]!, { comment: 'changed after the first load' });
      sb.control.remove(a!, 'achievements', ach[4]!);
      sb.control.remove(a!, 'achievements', ach[5]!);
      sb.control.restore(a!, 'achievements', ach[5]!);
      sb.control.add(b ?? a!, 'achievements', 3);
      const killed = await killedRun(1, ['--full-refresh']);
      expect(manifests()).not.toContain(`${killed}.json`);
      expect(readdirSync(join(dest, '_manifests', killed)).length).toBeGreaterThan(0);
      await load();

      // Shard 0 finishes last, with the lowest run id.
      gate0.release();
      const s0 = await run0;
      expect(s0.failures).toEqual([]);
      await load();
      await expectWarehouseEquals(shard0);

      // The next night's shard 1 run reads what the killed run did not commit.
      const again = await runExport(config(1), { token: sb.tokens.full });
      expect(again.failures).toEqual([]);
      await load();
      await load(); // loading again changes nothing
      await expectWarehouseEquals(schools.map((s) => s.id));

      // warehouse load (DuckDB) over the same export builds the same tables.
      const other = join(tmp.dir, 'load.duckdb');
      await warehouseLoad({ dest, into: `duckdb:${other}` });
      const [mine, theirs] = [await currentTables(db), await currentTables(other)];
      for (const [table, rows] of theirs)
        expect({ table, rows: canonical(mine.get(table) ?? []) }).toEqual({ table, rows: canonical(rows) });
    } finally {
      gate0.release();
      await run0.catch(() => undefined);
      await gate0.close();
    }
  });

  /** Runs shard I as a separate process killed (SIGKILL) when it asks for page 2 of a school's achievements. */
  async function killedRun(shard: number, extra: string[]): Promise<string> {
    const args = ['--dest', dest, '--format', 'parquet', '--per-page', '50', '--concurrency', '1', '--shard', `${shard}/${N}`, ...extra];
    await runKilledAt(sb, args, (p) => ACHIEVEMENT_PAGE_2.test(p));
    const run = manifests().find((m) => m.endsWith(`-s${shard}of${N}`) && !manifests().includes(`${m}.json`));
    expect(run, 'the killed run left parts').toBeDefined();
    return run!;
  }
});
