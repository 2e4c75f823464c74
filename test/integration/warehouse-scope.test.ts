import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runExport } from '../../src/pipeline/run.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { builtinTables, warehouseLoad } from '../../src/warehouse/commands.ts';
import { rewriteRunEntries, runStaticScript } from '../warehouse/fixtures.ts';
import { currentTables } from '../warehouse/tables.ts';
import { sandboxConfig, tempDir } from './helpers.ts';

/**
 * A less-privileged read must not blank data (issue 9, 1.3 c): a full read with the full token,
 * then a full read of the same rows with the limited token (the sandbox answers `comment: null`
 * without the scope). The manifest of the second run records the masked columns; both loaders
 * keep the values read with the scope, because the row versions (updated_at) are the same.
 */
describe('scope-masked columns in the warehouse', () => {
  let sb: Sandbox;
  const tmp = tempDir('wh-scope-');
  const dest = join(tmp.dir, 'exports');

  beforeAll(async () => {
    sb = await startSandbox({ seed: 5, schools: 2, achievementsPerSchool: 40 });
  });
  afterAll(async () => {
    await sb?.close();
    tmp.cleanup();
  });

  /** What the pipeline records for a task whose token lacked the scope of `comment` (kept if it already does). */
  function recordMasked(runId: string): void {
    rewriteRunEntries(dest, runId, (t) => {
      if (t.resource === 'achievements' && !t.scope_masked) t.scope_masked = { achievements: ['comment'] };
    });
  }

  it('a full read with the limited token keeps the values of the full read; a later change replaces them', async () => {
    const cfg = (extra = {}) => sandboxConfig(sb, dest, { format: 'parquet', resources: ['achievements'], ...extra });
    const first = await runExport(cfg(), { token: sb.tokens.full });
    expect(first.failures).toEqual([]);
    const second = await runExport(cfg({ full_refresh: true }), { token: sb.tokens.limited });
    expect(second.failures).toEqual([]);
    recordMasked(second.runId);
    expect(readdirSync(join(dest, '_manifests')).filter((f) => f.endsWith('.json')).length).toBe(2);

    const comments = async (db: string) =>
      new Map(((await currentTables(db)).get('achievements') ?? []).map((r) => [`${String(r._school_id)}/${String(r.id)}`, r.comment]));
    const upstream = new Map<string, unknown>();
    for (const school of ['A1001', 'A1002'])
      for (const r of sb.control.records(school, 'achievements') as { id: string; comment: unknown }[])
        upstream.set(`${school}/${r.id}`, r.comment);
    expect([...upstream.values()].filter((c) => c !== null).length).toBeGreaterThan(10);

    const viaScript = join(tmp.dir, 'script.duckdb');
    const viaLoad = join(tmp.dir, 'load.duckdb');
    await runStaticScript(dest, viaScript, builtinTables());
    await warehouseLoad({ dest, into: `duckdb:${viaLoad}` });
    for (const db of [viaScript, viaLoad]) expect(await comments(db)).toEqual(upstream);

    // An achievement changed upstream and read again with the limited token: the new version wins, null.
    const [key] = [...upstream.keys()];
    const [school, id] = key!.split('/');
    sb.control.update(school!, 'achievements', id!, { points: 99 });
    const third = await runExport(cfg(), { token: sb.tokens.limited });
    recordMasked(third.runId);
    await runStaticScript(dest, viaScript, builtinTables());
    await warehouseLoad({ dest, into: `duckdb:${viaLoad}` });
    for (const db of [viaScript, viaLoad]) {
      const now = await comments(db);
      expect(now.get(key!)).toBeNull();
      expect(Object.fromEntries([...now.entries()].filter(([k]) => k !== key))).toEqual(
        Object.fromEntries([...upstream.entries()].filter(([k]) => k !== key)),
      );
    }
  });

  it('with detection switched off (no scope_masked, no scope_guarded in any manifest) a declared guarded column still keeps its values', async () => {
    const blind = join(tmp.dir, 'blind');
    const cfg = (extra = {}) => sandboxConfig(sb, blind, { format: 'parquet', resources: ['achievements'], ...extra });
    const forget = (runId: string) =>
      rewriteRunEntries(blind, runId, (t) => {
        delete t.scope_masked;
        delete t.scope_guarded;
      });
    const first = await runExport(cfg(), { token: sb.tokens.full });
    expect(first.failures).toEqual([]);
    forget(first.runId);
    const second = await runExport(cfg({ full_refresh: true }), { token: sb.tokens.limited });
    expect(second.failures).toEqual([]);
    forget(second.runId);

    const upstream = new Map<string, unknown>();
    for (const school of ['A1001', 'A1002'])
      for (const r of sb.control.records(school, 'achievements') as { id: string; comment: unknown }[])
        upstream.set(`${school}/${r.id}`, r.comment);
    // the limited token's read wrote nulls for every comment: the guard, not the files, keeps them
    expect([...upstream.values()].filter((c) => c !== null).length).toBeGreaterThan(10);
    const viaScript = join(tmp.dir, 'blind-script.duckdb');
    const viaLoad = join(tmp.dir, 'blind-load.duckdb');
    await runStaticScript(blind, viaScript, builtinTables());
    await warehouseLoad({ dest: blind, into: `duckdb:${viaLoad}` });
    for (const db of [viaScript, viaLoad]) {
      const got = new Map(
        ((await currentTables(db)).get('achievements') ?? []).map((r) => [`${String(r._school_id)}/${String(r.id)}`, r.comment]),
      );
      expect(got).toEqual(upstream);
    }
  });
});
