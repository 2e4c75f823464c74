import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { runExport } from '../../src/pipeline/run.ts';
import { createEncoding } from '../../src/encode/pool.ts';
import type { RunEvent } from '../../src/pipeline/progress.ts';
import { readManifests } from '../helpers/read-exports.ts';
import { sandboxConfig, tempDir } from './helpers.ts';

/** Issue 25, item 2 (writer side): every NDJSON and CSV file records its longest line; values too large for a loader are warned about. */
describe('max_line_bytes and loader limits', () => {
  let sb: Sandbox;
  const big = 'x'.repeat(2 * 1024 * 1024 + 17) + ' "quoted", ✓\r\n'; // over DuckDB's default 2 MB line, with CSV quoting
  beforeAll(async () => {
    sb = await startSandbox({ seed: 5, schools: 2, achievementsPerSchool: 30, dataShape: 'wide' });
    const first = sb.control.records('A1001', 'achievements')[3] as { id: string };
    sb.control.update('A1001', 'achievements', first.id, { comment: big });
  });
  afterAll(() => sb.close());

  /** Bytes of each line (NDJSON) or record (CSV, header included), line end included. */
  function longest(path: string, csv: boolean): number {
    const buf = readFileSync(path);
    if (!csv)
      return Math.max(
        ...buf
          .toString('utf8')
          .split(/(?<=\n)/)
          .map((l) => Buffer.byteLength(l)),
      );
    // a CSV record ends at CRLF outside quotes (RFC 4180); quotes inside a field are doubled
    let max = 0;
    let start = 0;
    let quoted = false;
    for (let i = 0; i < buf.length; i++) {
      if (buf[i] === 0x22) quoted = !quoted;
      else if (!quoted && buf[i] === 0x0a && buf[i - 1] === 0x0d) {
        max = Math.max(max, i + 1 - start);
        start = i + 1;
      }
    }
    expect(start).toBe(buf.length);
    expect((parseCsv(buf) as unknown[]).length).toBeGreaterThan(1); // and it is CSV a parser reads
    return max;
  }

  for (const format of ['ndjson', 'csv'] as const) {
    for (const workers of [0, 2]) {
      it(`${format}, --workers ${workers}: each file's max_line_bytes is its longest line, line end included`, async () => {
        const { dir, cleanup } = tempDir();
        try {
          const encoding = workers ? createEncoding({ workers, busy: () => 1, smallPageBytes: 0 }) : undefined; // threads take every page
          const summary = await runExport(sandboxConfig(sb, dir, { format, resources: ['achievements', 'schools'], workers }), {
            token: sb.tokens.full,
            ...(encoding ? { encoding } : {}),
          });
          expect(summary.status).toBe('ok');
          const files = readManifests(dir).flatMap((t) => t.files);
          expect(files.length).toBeGreaterThan(4);
          for (const f of files) expect(f.max_line_bytes, f.path).toBe(longest(join(dir, f.path), format === 'csv'));
          const withBig = files.filter((f) => f.max_line_bytes! > 2 * 1024 * 1024);
          expect(withBig.map((f) => f.table)).toEqual(['achievements']);
        } finally {
          cleanup();
        }
      });
    }
  }

  it('Parquet files record no max_line_bytes', async () => {
    const { dir, cleanup } = tempDir();
    try {
      await runExport(sandboxConfig(sb, dir, { format: 'parquet', resources: ['achievements'] }), { token: sb.tokens.full });
      for (const f of readManifests(dir).flatMap((t) => t.files)) expect(f.max_line_bytes).toBeUndefined();
    } finally {
      cleanup();
    }
  });

  it('a value over Snowflake’s 16 MB field is written and warned about once per table, naming the column, never the value', async () => {
    const { dir, cleanup } = tempDir();
    const huge = '€'.repeat(6 * 1024 * 1024); // 18 MiB of UTF-8 in 6 Mi characters
    const ids = (sb.control.records('A1002', 'achievements') as { id: string }[]).slice(0, 2).map((r) => r.id);
    for (const id of ids) sb.control.update('A1002', 'achievements', id, { comment: huge });
    try {
      const events: RunEvent[] = [];
      const summary = await runExport(sandboxConfig(sb, dir, { format: 'ndjson', resources: ['achievements'], schools: ['A1002'] }), {
        token: sb.tokens.full,
        reporter: { emit: (e) => events.push(e), close() {} },
      });
      expect(summary.status).toBe('ok');
      const warnings = events.filter((e) => e.event === 'value_over_limit');
      expect(warnings).toEqual([
        {
          event: 'value_over_limit',
          school_id: 'A1002',
          resource: 'achievements',
          table: 'achievements',
          column: 'comment',
          bytes: 18 * 1024 * 1024,
          loader: 'Snowflake',
          limit_bytes: 16 * 1024 * 1024,
        },
      ]);
      expect(JSON.stringify(events)).not.toContain('€€€');
      const file = readManifests(dir).flatMap((t) => t.files)[0]!;
      expect(file.max_line_bytes).toBeGreaterThan(18 * 1024 * 1024);
    } finally {
      for (const id of ids) sb.control.update('A1002', 'achievements', id, { comment: 'short again' });
      cleanup();
    }
  });
});
