import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinTables, warehouseLoad } from '../../src/warehouse/commands.ts';
import { dump, writeRun } from './fixtures.ts';

/** The DuckDB queries in docs/warehouse.md run against a database loaded from the built-in tables, so they cannot rot. */
const RUN = '20240901T000000Z-0001';
const at = (d: string) => ({ [d]: '2024-09-02T08:00:00.000000Z', [`${d}__timezone`]: 'Europe/London' });

let dir: string;
let db: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'wh-docs-'));
  db = join(dir, 'school.duckdb');
  const tables = builtinTables();
  await writeRun(
    join(dir, 'exports'),
    RUN,
    'ndjson',
    [
      { school: 'A1234', resource: 'schools', mode: 'full', tables: { schools: [{ id: 'A1234', name: 'Hill School' }] } },
      {
        school: 'A1234',
        resource: 'achievements',
        mode: 'full',
        tables: {
          achievements: [
            {
              id: 'A10',
              mis_id: '10',
              type: 'Merit',
              points: 2,
              ...at('achievement_date'),
              ...at('created_at'),
              ...at('updated_at'),
              house: 'red',
            },
          ],
          achievement_students: [{ achievement_id: 'A10', id: 'A900' }],
        },
      },
      {
        school: 'A1234',
        resource: 'deletions',
        mode: 'incremental',
        tables: {
          deletions: [{ type: 'achievement', id: 'A11', mis_id: '11', ...at('deleted_at'), detected_by: 'api', table: 'achievements' }],
        },
      },
    ],
    [],
    tables,
  );
  await warehouseLoad({ dest: join(dir, 'exports'), into: `duckdb:${db}`, tables });
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('docs/warehouse.md', () => {
  it('DuckDB queries run and find the data', async () => {
    const md = await readFile(new URL('../../docs/warehouse.md', import.meta.url), 'utf8');
    const section = md.slice(md.indexOf('## DuckDB'), md.indexOf('## BigQuery'));
    const block = /```sql\n([\s\S]*?)```/.exec(section)?.[1];
    expect(block).toBeDefined();
    const statements = (block ?? '')
      .split(/;\s*\n/)
      .map((s) => s.replace(/^--.*$/gm, '').trim())
      .filter((s) => s !== '');
    expect(statements.length).toBeGreaterThanOrEqual(7);
    const results: Record<string, unknown>[][] = [];
    for (const s of statements) results.push(s.startsWith('SET') ? [] : await dump(db, s));
    expect(results[1]).toEqual([expect.objectContaining({ run_id: RUN })]);
    expect(results[3]).toEqual([expect.objectContaining({ id: 'A10', students: ['A900'] })]);
    expect(results[4]).toEqual([{ name: 'Hill School', points: '2' }]);
    expect(results[5]).toEqual([expect.objectContaining({ id: 'A10', _extra: '{"house":"red"}' })]);
    expect(results[6]).toEqual([expect.objectContaining({ table: 'achievements', id: 'A11' })]);
  });
});
