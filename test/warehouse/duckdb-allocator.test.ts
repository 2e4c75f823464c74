import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { listDocs, partPath, runManifestPath, type ManifestSource } from '../../src/manifest/layout.ts';
import {
  ALLOCATOR_CONF_VAR,
  allocatorConfFor,
  FEW_CHANGES,
  KEEP_BRIEFLY,
  newestExportSize,
  prepareDuckDbAllocator,
  RETURN_AT_ONCE,
  SMALL_RUN,
  threadsFor,
} from '../../src/warehouse/duckdb-allocator.ts';

/** A destination's manifests in memory: path -> JSON. */
function source(docs: Record<string, unknown>): ManifestSource {
  return {
    read: async (p) => (p in docs ? Buffer.from(JSON.stringify(docs[p]) + '\n') : undefined),
    list: async (prefix) =>
      Object.keys(docs)
        .filter((p) => p.startsWith(prefix))
        .sort(),
  };
}

function runManifest(runId: string, kind: 'export' | 'compaction', tasks: Record<string, number>, rows: Record<string, number>) {
  return {
    version: 2,
    layout: 'parts',
    kind,
    run_id: runId,
    started_at: '2026-11-28T00:00:00.000Z',
    finished_at: '2026-11-28T00:01:00.000Z',
    format: 'parquet',
    status: 'ok',
    summary: { tasks, rows, files: 1, bytes: 1, deletions: 0, failures: [], failures_total: 0 },
    parts: [{ path: partPath(runId, 1), part: 1, tasks: 1, bytes: 1 }],
  };
}

const sizeOf = async (docs: Record<string, unknown>) => {
  const src = source(docs);
  return newestExportSize(src, await listDocs(src));
};

describe('DuckDB allocator of a load', () => {
  it('keeps freed pages briefly for a small newest run, returns them at once for a big or unknown one', () => {
    expect(allocatorConfFor({ tasks: 60, rows: 2_067 })).toBe(KEEP_BRIEFLY);
    expect(allocatorConfFor(SMALL_RUN)).toBe(KEEP_BRIEFLY);
    expect(allocatorConfFor({ tasks: SMALL_RUN.tasks + 1, rows: 10 })).toBe(RETURN_AT_ONCE);
    expect(allocatorConfFor({ tasks: 24, rows: SMALL_RUN.rows + 1 })).toBe(RETURN_AT_ONCE);
    expect(allocatorConfFor(undefined)).toBe(RETURN_AT_ONCE);
  });

  it("runs a load of a few schools' changes on one thread, others on what the caller asked (default: one per core)", () => {
    expect(threadsFor({ tasks: 60, rows: 2_067 }, undefined)).toBe(1);
    expect(threadsFor(FEW_CHANGES, undefined)).toBe(1);
    expect(threadsFor({ tasks: FEW_CHANGES.tasks + 1, rows: 10 }, undefined)).toBeUndefined();
    expect(threadsFor({ tasks: 20, rows: FEW_CHANGES.rows + 1 }, undefined)).toBeUndefined();
    expect(threadsFor(undefined, undefined)).toBeUndefined();
    // what the caller asks wins either way
    expect(threadsFor({ tasks: 60, rows: 2_067 }, 4)).toBe(4);
    expect(threadsFor(undefined, 3)).toBe(3);
  });

  it('sizes the newest export run from its run manifest, passing over compactions and runs killed before theirs', async () => {
    const docs: Record<string, unknown> = {
      [runManifestPath('20261126T010000.000Z-aaaa')]: runManifest(
        '20261126T010000.000Z-aaaa',
        'export',
        { committed: 120_000 },
        { achievements: 9e6 },
      ),
      [runManifestPath('20261127T010000.000Z-bbbb')]: runManifest(
        '20261127T010000.000Z-bbbb',
        'export',
        { committed: 30, unchanged: 30 },
        { achievements: 60, schools: 6 },
      ),
      [runManifestPath('20261127T120000.000Z-cccc')]: runManifest('20261127T120000.000Z-cccc', 'compaction', { compacted: 9 }, {}),
      // killed: parts only, no run manifest
      [partPath('20261128T010000.000Z-dddd', 1)]: { version: 1, tasks: [] },
    };
    expect(await sizeOf(docs)).toEqual({ tasks: 60, rows: 66 });
    expect(await sizeOf({})).toBeUndefined();
    // one shard of 40: the night is 40 times as big
    const shard = {
      ...runManifest('20261129T010000.000Z-eeee-s3of40', 'export', { committed: 250 }, { achievements: 500 }),
      shard: { index: 3, count: 40 },
    };
    expect(await sizeOf({ ...docs, [runManifestPath('20261129T010000.000Z-eeee-s3of40')]: shard })).toEqual({
      tasks: 10_000,
      rows: 20_000,
    });
    // a run manifest without a usable summary sizes nothing (and does not stop the load here)
    const { summary: _gone, ...bare } = runManifest('20261130T010000.000Z-ffff', 'export', {}, {});
    expect(await sizeOf({ ...docs, [runManifestPath('20261130T010000.000Z-ffff')]: bare })).toBeUndefined();
    // an export written before run manifests had summaries (one document with its tasks): unknown
    expect(
      await sizeOf({ [runManifestPath('20240101T000000Z-0001')]: { version: 1, run_id: '20240101T000000Z-0001', tasks: [] } }),
    ).toBeUndefined();
  });

  it("keeps the user's own setting", () => {
    const env: NodeJS.ProcessEnv = {};
    prepareDuckDbAllocator(KEEP_BRIEFLY, env);
    expect(env[ALLOCATOR_CONF_VAR]).toBe(KEEP_BRIEFLY);
    const mine: NodeJS.ProcessEnv = { [ALLOCATOR_CONF_VAR]: 'dirty_decay_ms:1000' };
    prepareDuckDbAllocator(RETURN_AT_ONCE, mine);
    expect(mine[ALLOCATOR_CONF_VAR]).toBe('dirty_decay_ms:1000');
  });

  // jemalloc ignores what it cannot parse (with a warning): each setting must reach DuckDB's allocator as meant
  it.each([
    [KEEP_BRIEFLY, ['opt.narenas: 1', 'opt.dirty_decay_ms: 1000']],
    [RETURN_AT_ONCE, ['opt.dirty_decay_ms: 0', 'opt.muzzy_decay_ms: 0']],
  ])('%s is what DuckDB allocates with', (conf, expected) => {
    const program =
      "const { DuckDBInstance } = await import('@duckdb/node-api'); const db = await DuckDBInstance.create(':memory:'); " +
      "const c = await db.connect(); await c.run('SELECT 1'); c.closeSync(); db.closeSync();";
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', program], {
      env: { ...process.env, [ALLOCATOR_CONF_VAR]: `${conf},stats_print:true` },
      encoding: 'utf8',
    });
    expect(r.status).toBe(0);
    expect(r.stderr).not.toContain('<jemalloc>');
    for (const line of expected) expect(r.stderr + r.stdout).toContain(line);
  });
});
