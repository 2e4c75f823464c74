import { describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalSink } from '../../src/sink/local.ts';
import { Committer } from '../../src/manifest/committer.ts';
import type { ManifestTask } from '../../src/manifest/types.ts';

const task = (school: string, resource: string): ManifestTask => ({
  school_id: school,
  region: 'uk',
  resource,
  status: 'committed',
  mode: 'full',
  files: [{ table: resource, path: `${resource}/region=uk/school_id=${school}/r-0001.ndjson`, rows: 1, bytes: 2, sha256: 'x' }],
  rows: { [resource]: 1 },
});

describe('Committer', () => {
  it('lists a task in a durable part before promoting its state, then writes the run manifest and drops the parts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'committer-'));
    try {
      const sink = new LocalSink(dir);
      const c = new Committer(sink, {
        version: 1,
        run_id: '20260101T000000.000Z-abcd',
        started_at: '2026-01-01T00:00:00Z',
        format: 'ndjson',
      });
      const seenAtPromote: string[][] = [];
      const promote = async () => {
        seenAtPromote.push(readdirSync(join(dir, '_manifests/20260101T000000.000Z-abcd')));
      };
      await Promise.all([
        c.commit({ task: task('A1', 'achievements'), deletions: [], promote }),
        c.commit({ task: task('A2', 'achievements'), deletions: [], promote }),
      ]);
      expect(seenAtPromote.every((parts) => parts.length >= 1)).toBe(true);

      // A failing promotion: the task stays listed (its files are valid) with its error, once.
      const failing = c.commit({
        task: task('A3', 'achievements'),
        deletions: [],
        promote: async () => Promise.reject(new Error('disk full')),
      });
      await expect(failing).rejects.toMatchObject({ code: 'E_STATE', listed: true });

      const m = await c.finish();
      expect(m.status).toBe('partial');
      expect(m.tasks.map((t) => t.school_id)).toEqual(['A1', 'A2', 'A3']);
      expect(m.tasks[2]!.error?.message).toMatch(/state not advanced: disk full/);
      const onDisk = JSON.parse(readFileSync(join(dir, '_manifests/20260101T000000.000Z-abcd.json'), 'utf8'));
      expect(onDisk.tasks.length).toBe(3);
      expect(
        existsSync(join(dir, '_manifests/20260101T000000.000Z-abcd')) ? readdirSync(join(dir, '_manifests/20260101T000000.000Z-abcd')) : [],
      ).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
