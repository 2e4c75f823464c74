import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runExport } from '../../src/pipeline/run.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { openSink } from '../../src/sink/index.ts';
import { builtinTables, warehouseLoad } from '../../src/warehouse/commands.ts';
import { purgeSchool } from '../../src/webhooks/purge.ts';
import { startGateProxy } from '../warehouse/gate-proxy.ts';
import { runStaticScript } from '../warehouse/fixtures.ts';
import { currentTables } from '../warehouse/tables.ts';
import { sandboxConfig, tempDir } from './helpers.ts';

/**
 * A purge (access revoked with --purge-on-revoke) must stick in the warehouse: after it, no row
 * of the school remains in any current-state or raw table, and the tasks of a run that started
 * before it (even when they commit after it, as a run in flight does) are never loaded.
 */
describe('a purge in the warehouse', () => {
  let sb: Sandbox;
  const tmp = tempDir('wh-purge-');
  const dest = join(tmp.dir, 'exports');

  beforeAll(async () => {
    sb = await startSandbox({ seed: 31, schools: 3, achievementsPerSchool: 60 });
  });
  afterAll(async () => {
    await sb?.close();
    tmp.cleanup();
  });

  /** Rows of the school per table, current state and raw, for every table of the warehouse. */
  async function rowsOf(db: string, school: string): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    for (const raw of [false, true])
      for (const [t, rows] of await currentTables(db, { raw })) out[t] = rows.filter((r) => r._school_id === school).length;
    return out;
  }

  it('leaves no row of the school in any table, also when a run in flight commits its tasks after the purge', async () => {
    const cfg = (extra = {}) => sandboxConfig(sb, dest, { format: 'parquet', per_page: 25, ...extra });
    expect((await runExport(cfg(), { token: sb.tokens.full })).failures).toEqual([]);
    const db = { script: join(tmp.dir, 'script.duckdb'), load: join(tmp.dir, 'load.duckdb') };
    const loadBoth = async () => {
      await runStaticScript(dest, db.script, builtinTables());
      await warehouseLoad({ dest, into: `duckdb:${db.load}` });
    };
    await loadBoth();
    const school = 'A1001';
    const before = await rowsOf(db.load, school);
    const tablesWithRows = Object.entries(before)
      .filter(([, n]) => n > 0)
      .map(([t]) => t);
    // The school is in every table the sandbox fills: the current-state and raw tables alike.
    expect(tablesWithRows.length).toBeGreaterThanOrEqual(18);

    // A run is paging the school's achievements when access is revoked and the school purged;
    // then the run goes on and commits the school's tasks.
    const gate = await startGateProxy([sb.url, ...Object.values(sb.domains)], (p) =>
      new RegExp(`^/v1\\.0/schools/${school}/achievements\\?.*\\b(cursor|page)=`).test(p),
    );
    try {
      const via = {
        ...sb,
        url: gate.map[sb.url]!,
        domains: Object.fromEntries(Object.entries(sb.domains).map(([d, u]) => [d, gate.map[u]!])),
      };
      const inFlight = runExport(sandboxConfig(via, dest, { format: 'parquet', per_page: 25, full_refresh: true }), {
        token: sb.tokens.full,
      });
      await gate.reached;
      const sink = await openSink(dest);
      try {
        await purgeSchool(sink, school, 'accessRevoked');
      } finally {
        await sink.close();
      }
      gate.release();
      await inFlight;
    } finally {
      await gate.close();
    }
    await loadBoth();
    for (const path of [db.script, db.load]) {
      const after = await rowsOf(path, school);
      expect(Object.entries(after).filter(([, n]) => n > 0)).toEqual([]);
      // Other schools are untouched.
      expect((await currentTables(path)).get('achievements')!.some((r) => r._school_id === 'A1002')).toBe(true);
    }
  });
});
