import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import type { DocChunk } from '../../src/manifest/layout.ts';
import type { ManifestTask } from '../../src/manifest/types.ts';
import { ManifestTables } from '../../src/warehouse/manifests.ts';
import { T } from '../../src/warehouse/nightly.ts';

const RUN = '20240101T000000Z-0001';

function chunkOf(schools: number): DocChunk {
  const tasks = Array.from(
    { length: schools },
    (_, i) =>
      ({
        school_id: `A${1000 + i}`,
        resource: 'achievements',
        status: 'committed',
        mode: 'full',
        files: [
          {
            table: 'achievements',
            path: `achievements/region=uk/school_id=A${1000 + i}/${RUN}-0001.parquet`,
            rows: 2,
            sha256: 'a'.repeat(64),
          },
        ],
      }) as unknown as ManifestTask,
  );
  return {
    doc: { path: `_manifests/${RUN}/part-00001.json`, runId: RUN, kind: 'part', part: 1 },
    header: {},
    tasks,
    deletions: [],
    purged: [],
  } as unknown as DocChunk;
}

describe('ManifestTables', () => {
  it('hands appended rows to their table as it goes, not all at the final flush (DuckDB holds unflushed rows outside its memory limit)', async () => {
    const db = await DuckDBInstance.create(':memory:');
    const conn = await db.connect();
    const tables = new ManifestTables(conn);
    try {
      await tables.create();
      await tables.add(chunkOf(25_000));
      const count = async (t: string) =>
        Number((await conn.runAndReadAll(`SELECT count(*)::INTEGER AS n FROM "${t}"`)).getRowObjectsJS()[0]!.n);
      // before any flush() of ours: what is still held by the appender is under 10,000 rows a table
      expect(await count(T.tasks)).toBeGreaterThan(15_000);
      expect(await count(T.files)).toBeGreaterThan(15_000);
      tables.flush();
      expect(await count(T.tasks)).toBe(25_000);
      expect(await count(T.files)).toBe(25_000);
    } finally {
      tables.close();
      conn.closeSync();
      db.closeSync();
    }
  });
});
