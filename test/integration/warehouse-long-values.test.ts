import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runExport } from '../../src/pipeline/run.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { readerLimits } from '../../src/warehouse/duckdb-stage.ts';
import { warehouseLoad } from '../../src/warehouse/commands.ts';
import { rewriteRunEntries } from '../warehouse/fixtures.ts';
import { currentTables } from '../warehouse/tables.ts';
import { sandboxConfig, tempDir } from './helpers.ts';

/**
 * Issue 25 item 2: a value longer than DuckDB's reader defaults (2 MB CSV lines) loads. A 2.5 MB
 * comment (1.25 million two-byte characters) goes through CSV and NDJSON into `warehouse load`,
 * once as the manifest stands and once with the longest line recorded (max_line_bytes).
 */
describe.each(['csv', 'ndjson'] as const)('a 2.5 MB value through %s', (format) => {
  let sb: Sandbox;
  const tmp = tempDir(`wh-long-${format}-`);
  const dest = join(tmp.dir, 'exports');
  const comment = 'é'.repeat(1_250_000);

  beforeAll(async () => {
    sb = await startSandbox({ seed: 8, schools: 1, achievementsPerSchool: 5 });
  });
  afterAll(async () => {
    await sb?.close();
    tmp.cleanup();
  });

  it('loads into DuckDB, with or without the longest line in the manifest', async () => {
    const schoolId = 'A1001';
    const id = String(sb.control.records(schoolId, 'achievements')[0]!.id);
    sb.control.update(schoolId, 'achievements', id, { comment });
    const r = await runExport(sandboxConfig(sb, dest, { format, resources: ['achievements'] }), { token: sb.tokens.full });
    expect(r.failures).toEqual([]);

    const comments = async (db: string) =>
      new Map(((await currentTables(db)).get('achievements') ?? []).map((x) => [String(x.id), x.comment]));
    const plain = join(tmp.dir, 'plain.duckdb');
    await warehouseLoad({ dest, into: `duckdb:${plain}` });
    const loaded = await comments(plain);
    expect((loaded.get(id) as string).length).toBe(comment.length);
    expect(loaded.get(id) === comment).toBe(true);

    // the writer records the longest line (perf's max_line_bytes): the readers are sized from it
    rewriteRunEntries(dest, r.runId, (t) => {
      for (const f of t.files) f.max_line_bytes = f.table === 'achievements' ? 2_600_000 : 400;
    });
    const recorded = join(tmp.dir, 'recorded.duckdb');
    await warehouseLoad({ dest, into: `duckdb:${recorded}` });
    expect(await comments(recorded)).toEqual(loaded);
  }, 120_000);
});

describe('reader limits', () => {
  it('follow the longest line a manifest records, else the file size (uncompressed) or a large default', () => {
    expect(readerLimits('csv', [{ path: 'a.csv', bytes: 10, maxLineBytes: 2_600_000 }]).maxLine).toBeGreaterThanOrEqual(2_600_000);
    expect(readerLimits('csv', [{ path: 'a.csv', bytes: 10, maxLineBytes: 100 }]).maxLine).toBe(2_000_000); // DuckDB's default is the floor
    expect(readerLimits('csv', [{ path: 'a.csv', bytes: 5_000_000 }]).maxLine).toBeGreaterThanOrEqual(5_000_000);
    expect(readerLimits('csv', [{ path: 'a.csv.gz', bytes: 1_000 }]).maxLine).toBeGreaterThanOrEqual(64 * 1024 * 1024);
    expect(readerLimits('ndjson', [{ path: 'a.ndjson', bytes: 10, maxLineBytes: 100 }]).maxLine).toBeLessThan(2 * 1024 * 1024);
    const csv = readerLimits('csv', [{ path: 'a.csv', bytes: 10, maxLineBytes: 40_000_000 }]);
    expect(csv.buffer).toBeGreaterThan(csv.maxLine); // DuckDB's buffer must hold a whole line
  });
});
