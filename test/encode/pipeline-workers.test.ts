import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runExport } from '../../src/pipeline/run.ts';
import { createEncoding } from '../../src/encode/pool.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { allSchemas, sandboxConfig, tempDir } from '../integration/helpers.ts';
import { readManifests, readRows } from '../helpers/read-exports.ts';
import type { PipelineConfig } from '../../src/config/schema.ts';

/**
 * Exports through the worker pool, through the same generated serialisers on the main thread
 * (--workers 0), and (Parquet) through parquetjs-lite, which takes flattened rows: the files,
 * their cuts at --max-file-rows (here mid-page) and their row counts are the same; text files
 * are byte-identical but for the run id, Parquet files hold the same rows.
 */
describe('exports with worker threads', () => {
  let sb: Sandbox;
  beforeAll(async () => {
    sb = await startSandbox({ seed: 4, schools: 2, achievementsPerSchool: 1_300 });
  });
  afterAll(async () => {
    await sb?.close();
  });
  const schemas = allSchemas();

  async function exportWith(extra: PipelineConfig) {
    const tmp = tempDir('workers-');
    // with workers, a pool whose threads take every page (this thread reads as the bottleneck)
    const encoding = extra.workers ? createEncoding({ workers: extra.workers, busy: () => 1, smallPageBytes: 0 }) : undefined;
    const summary = await runExport(sandboxConfig(sb, tmp.dir, { resources: ['achievements'], max_file_rows: 700, ...extra }), {
      token: sb.tokens.full,
      now: () => new Date('2026-11-24T00:00:00.000Z'), // the same _extracted_at in both runs
      ...(encoding ? { encoding } : {}),
    });
    if (encoding) expect(encoding.started).toBeGreaterThan(0);
    expect(summary.failures).toEqual([]);
    const files = readManifests(tmp.dir)
      .flatMap((t) => t.files)
      .map((f) => ({ ...f, path: f.path.replace(summary.runId, 'RUN') }))
      .sort((a, b) => a.path.localeCompare(b.path));
    const text = (p: string) => readFileSync(join(tmp.dir, p.replace('RUN', summary.runId)), 'utf8').replaceAll(summary.runId, 'RUN');
    const rows = async (f: { path: string; table: string }) =>
      (await readRows(tmp.dir, f.path.replace('RUN', summary.runId), schemas.get(f.table)!.schema)).map((r) => ({ ...r, _run_id: 'RUN' }));
    return { tmp, files, text, rows };
  }

  it.each(['ndjson', 'csv'] as const)(
    '%s: the same files, cut at the same rows, byte for byte',
    async (format) => {
      const a = await exportWith({ format, workers: 2 });
      const b = await exportWith({ format, workers: 0 });
      try {
        expect(a.files.map((f) => [f.path, f.rows, f.bytes])).toEqual(b.files.map((f) => [f.path, f.rows, f.bytes]));
        expect(a.files.filter((f) => f.table === 'achievements').map((f) => f.rows)).toEqual([700, 600, 700, 600]);
        for (const f of a.files) expect(a.text(f.path), f.path).toBe(b.text(f.path));
      } finally {
        a.tmp.cleanup();
        b.tmp.cleanup();
      }
    },
    120_000,
  );

  it('parquet: the same rows as the row-based writer, in the same files', async () => {
    const a = await exportWith({ format: 'parquet', workers: 2 });
    const b = await exportWith({ format: 'parquet', parquet_writer: 'parquetjs-lite' });
    try {
      expect(a.files.map((f) => [f.path, f.rows])).toEqual(b.files.map((f) => [f.path, f.rows]));
      for (const f of a.files) expect(await a.rows(f), f.path).toEqual(await b.rows(f));
    } finally {
      a.tmp.cleanup();
      b.tmp.cleanup();
    }
  }, 120_000);
});
