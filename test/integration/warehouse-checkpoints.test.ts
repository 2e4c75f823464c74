import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Manifest } from '../../src/manifest/types.ts';
import { runExport } from '../../src/pipeline/run.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { builtinTables, warehouseLoad } from '../../src/warehouse/commands.ts';
import { runEntries, runStaticScript } from '../warehouse/fixtures.ts';
import { runKilledAt } from '../warehouse/killed-run.ts';
import { currentTables } from '../warehouse/tables.ts';
import { canonical, expectedState, sandboxConfig, tempDir } from './helpers.ts';

/**
 * A long full read committed in checkpoint pieces and killed midway, then resumed by the next
 * run: each load applies the pieces committed so far (their rows are real data), and the full
 * read's removals (rows gone upstream) only once the final piece has committed. Both loaders.
 */
describe('checkpoint pieces in the warehouse', () => {
  let sb: Sandbox;
  const tmp = tempDir('wh-checkpoints-');
  const dest = join(tmp.dir, 'exports');
  const big = 'A1001';

  beforeAll(async () => {
    sb = await startSandbox({ seed: 47, schools: 1, bigSchools: { [big]: 600 } });
  });
  afterAll(async () => {
    await sb?.close();
    tmp.cleanup();
  });

  const ids = async (db: string) => new Set(((await currentTables(db)).get('achievements') ?? []).map((r) => String(r.id)));

  it('loads the pieces of a killed full read, removes rows gone upstream only when a later run completes it', async () => {
    const base = { format: 'parquet' as const, resources: ['achievements'], per_page: 50, checkpoint_pages: 3 };
    expect((await runExport(sandboxConfig(sb, dest, base), { token: sb.tokens.full })).failures).toEqual([]);
    const db = { load: join(tmp.dir, 'load.duckdb'), script: join(tmp.dir, 'script.duckdb') };
    const loadBoth = async () => {
      await runStaticScript(dest, db.script, builtinTables());
      await warehouseLoad({ dest, into: `duckdb:${db.load}` });
    };
    await loadBoth();

    // Rows deleted upstream (without deletion records reaching this run: a full read must find them gone).
    const all = sb.control.records(big, 'achievements').map((r) => (r as { id: string }).id);
    const gone = [all[1]!, all[300]!, all[550]!];
    for (const id of gone) sb.control.remove(big, 'achievements', id);

    // A full read killed at page 10: pieces of 3 pages each have committed, the read has not.
    let pagesSeen = 0;
    await runKilledAt(
      sb,
      [
        '--dest',
        dest,
        '--format',
        'parquet',
        '--resources',
        'achievements',
        '--per-page',
        '50',
        '--checkpoint-pages',
        '4',
        '--full-refresh',
      ],
      (p) => /\/schools\/A1001\/achievements\?/.test(p) && p.match(/cursor=|page=/) !== null && ++pagesSeen >= 9,
    );
    const killed = readdirSync(join(dest, '_manifests')).find(
      (m) => !m.endsWith('.json') && !existsSync(join(dest, '_manifests', `${m}.json`)),
    )!;
    const pieces = readdirSync(join(dest, '_manifests', killed)).flatMap(
      (f) => (JSON.parse(readFileSync(join(dest, '_manifests', killed, f), 'utf8')) as Manifest).tasks,
    );
    expect(pieces.length).toBeGreaterThanOrEqual(1);
    expect(pieces.every((t) => t.checkpoint && !t.checkpoint.final && t.checkpoint.snapshot === killed)).toBe(true);
    await loadBoth();
    // Nothing was removed from a snapshot that has not completed.
    for (const path of [db.script, db.load]) {
      const now = await ids(path);
      for (const id of gone) expect(now.has(id), `${id} is removed only when the read completes`).toBe(true);
    }

    // The next run resumes the read and completes it: the final piece applies the snapshot.
    const resumed = await runExport(sandboxConfig(sb, dest, base), { token: sb.tokens.full });
    expect(resumed.failures).toEqual([]);
    await loadBoth();
    const region = runEntries(dest, resumed.runId)[0]!.region;
    const expected = await expectedState(sb, [big], () => region);
    for (const path of [db.script, db.load]) {
      const actual = await currentTables(path);
      for (const table of ['achievements', 'achievement_students', 'achievement_employees'])
        expect({ table, rows: canonical(actual.get(table) ?? []) }).toEqual({ table, rows: canonical(expected.get(table) ?? []) });
    }
  });
});
