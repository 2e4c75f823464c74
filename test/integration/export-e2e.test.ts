import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { runExport } from '../../src/pipeline/run.ts';
import { readState } from '../../src/manifest/state-store.ts';
import { openSink } from '../../src/sink/index.ts';
import { currentState, readManifests, warehouseState, readRunManifest } from '../helpers/read-exports.ts';
import { allSchemas, canonical, expectedState, sandboxConfig, tempDir } from './helpers.ts';

/**
 * The main promise of the exporter: after a full run and incremental runs, with updates,
 * deletions, restorations and additions (some made while a run is paging), the manifest-listed
 * files resolve to exactly the service's current data, for every table and every format.
 */
describe.each(['ndjson', 'csv', 'parquet'] as const)('export end to end (%s)', (format) => {
  let sb: Sandbox;
  const tmp = tempDir(`e2e-${format}-`);
  // the warehouse beside the destination, not in it: a loader must not meet its own database there
  const wh = tempDir(`e2e-${format}-wh-`);
  const schools: { id: string; region: string }[] = [];

  beforeAll(async () => {
    sb = await startSandbox({ seed: 7, schools: 3, achievementsPerSchool: 260, maxPerPage: 1000 });
  });
  afterAll(async () => {
    await sb?.close();
    tmp.cleanup();
    wh.cleanup();
  });

  async function check() {
    const regionOf = (id: string) => schools.find((s) => s.id === id)!.region;
    const expected = await expectedState(
      sb,
      schools.map((s) => s.id),
      regionOf,
    );
    const actual = await currentState(tmp.dir, allSchemas());
    for (const [table, rows] of expected) {
      expect({ table, rows: canonical(actual.get(table) ?? []) }).toEqual({ table, rows: canonical(rows) });
    }
    // The DuckDB warehouse, loaded incrementally from the same export, holds the same current state.
    const warehouse = await warehouseState(tmp.dir, join(wh.dir, 'warehouse.duckdb'));
    for (const [table, rows] of expected) {
      expect({ table, warehouse: canonical(warehouse.get(table) ?? []) }).toEqual({ table, warehouse: canonical(rows) });
    }
  }

  it('a full run exports every table of every approved school', async () => {
    const summary = await runExport(sandboxConfig(sb, tmp.dir, { format, per_page: 100 }), { token: sb.tokens.full });
    expect(summary.failures).toEqual([]);
    expect(summary.status).toBe('ok');
    // the first run walked the new destination whole and, having committed, says so: the second
    // night does not walk every school's folder again
    expect(existsSync(join(tmp.dir, '_state/_full-sweep.json'))).toBe(true);
    for (const t of readManifests(tmp.dir)) {
      if (!schools.some((s) => s.id === t.school_id)) schools.push({ id: t.school_id, region: t.region });
    }
    expect(schools.length).toBe(3);
    expect(summary.tables.achievements!.rows).toBe(3 * 260);
    expect(summary.tables.achievement_students!.rows).toBeGreaterThan(0);
    for (const t of readManifests(tmp.dir)) {
      expect(t.mode).toBe('full');
      for (const f of t.files) expect(existsSync(join(tmp.dir, f.path))).toBe(true);
    }
    await check();
  });

  it('incremental runs after updates, deletions, restorations and additions (some during paging) converge', async () => {
    const [a, b] = schools;
    const ach = sb.control.records(a!.id, 'achievements');
    const ids = ach.map((r) => (r as { id: string }).id);
    sb.control.update(a!.id, 'achievements', ids[3]!, { comment: 'changed, with "quotes", commas\nand =formula' });
    sb.control.remove(a!.id, 'achievements', ids[4]!);
    sb.control.remove(a!.id, 'achievements', ids[5]!);
    sb.control.restore(a!.id, 'achievements', ids[5]!);
    sb.control.add(b!.id, 'achievements', 3);

    const second = await runExport(sandboxConfig(sb, tmp.dir, { format, snapshot_every_hours: 0 }), { token: sb.tokens.full });
    expect(second.failures).toEqual([]);
    const incremental = readManifests(tmp.dir).filter((t) => t.run_id === second.runId && t.resource === 'achievements');
    expect(incremental.length).toBe(3);
    expect(incremental.every((t) => t.mode === 'incremental' && typeof t.updated_after === 'string')).toBe(true);
    // Incremental runs read only what changed (plus the lookback window), not everything again.
    expect(second.tables.achievements?.rows ?? 0).toBeLessThan(20);
    await check();

    // While a full run pages through the school (20 rows a page), change rows behind and ahead of
    // its cursor: the sandbox makes the changes when page 5 arrives, before answering it.
    sb.control.clearRequests(); // page counts start again
    let mutations = 0;
    const off = sb.control.onRequest({ school: a!.id, resource: 'achievements', page: 5 }, () => {
      mutations += 1;
      sb.control.update(a!.id, 'achievements', ids[1]!, { comment: 'changed during the run (behind the cursor)' });
      sb.control.update(a!.id, 'achievements', ids[ids.length - 2]!, { comment: 'changed during the run (ahead)' });
      sb.control.remove(a!.id, 'achievements', ids[ids.length - 3]!);
      sb.control.add(a!.id, 'achievements', 2);
    });
    const third = await runExport(sandboxConfig(sb, tmp.dir, { format, per_page: 20, full_refresh: true }), { token: sb.tokens.full });
    off();
    expect(mutations).toBe(1);
    // ... mid-read: pages of that school followed the one the changes landed at
    expect(sb.control.requests().filter((r) => r.path.startsWith(`/v1.0/schools/${a!.id}/achievements?`)).length).toBeGreaterThan(5);
    expect(third.failures).toEqual([]);

    // The next incremental run picks up whatever changed while the previous one was paging.
    const fourth = await runExport(sandboxConfig(sb, tmp.dir, { format, snapshot_every_hours: 0 }), { token: sb.tokens.full });
    expect(fourth.failures).toEqual([]);
    await check();

    // Assessment results have no deletion records: the next full snapshot detects the removed id.
    const results = sb.control.records(b!.id, 'assessment_results');
    const gone = (results[0] as { id: string }).id;
    sb.control.remove(b!.id, 'assessment_results', gone);
    const snap = await runExport(sandboxConfig(sb, tmp.dir, { format, resources: ['assessment_results'], full_refresh: true }), {
      token: sb.tokens.full,
    });
    expect(snap.failures).toEqual([]);
    const sink = await openSink(tmp.dir);
    const state = await readState(sink, b!.region, b!.id);
    expect(state.resources.assessment_results?.known_ids_file).toMatch(/^_state\/ids\//);
    const m = readRunManifest(tmp.dir, snap.runId);
    expect(m.deletions).toContainEqual(
      expect.objectContaining({ school_id: b!.id, id: gone, type: 'assessment_results', detected_by: 'snapshot' }),
    );
    await check();
  });

  it('state files and manifests say what happened', () => {
    const m = readRunManifest(tmp.dir, readManifests(tmp.dir)[0]!.run_id);
    expect(JSON.stringify(m)).not.toContain(sb.tokens.full);
    expect(m.status).toBe('ok');
    expect(m.tasks.every((t: { watermark?: string }) => typeof t.watermark === 'string')).toBe(true);
  });
});
