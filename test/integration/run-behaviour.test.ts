import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { runExport } from '../../src/pipeline/run.ts';
import { resolveRunConfig } from '../../src/config/resolve.ts';
import { readManifests, readRows, readRunManifest } from '../helpers/read-exports.ts';
import { compileFlattener } from '../../src/flatten/index.ts';
import { selectResources } from '../../src/resources/index.ts';
import { exportOnce, sandboxConfig, tempDir } from './helpers.ts';

describe('run behaviour', () => {
  let sb: Sandbox;
  beforeAll(async () => {
    sb = await startSandbox({ seed: 9, schools: 3, achievementsPerSchool: 120 });
  });
  afterAll(async () => {
    await sb?.close();
  });

  it('a failing task never stops the others nor advances its state, and the run names it', async () => {
    const tmp = tempDir('fail-');
    try {
      // Every attempt at one school's achievements fails with 500 (more than the retry budget).
      sb.control.fault({ kind: '500', times: 50, path: '/schools/A1002/achievements?' });
      const cfg = sandboxConfig(sb, tmp.dir, { format: 'ndjson' });
      const summary = await runExport(cfg, { token: sb.tokens.full });
      sb.control.clearFaults();
      expect(summary.status).toBe('partial');
      expect(summary.failures).toEqual([expect.objectContaining({ school_id: 'A1002', resource: 'achievements', code: 'E_HTTP_RETRIES' })]);
      expect(summary.tasks.committed).toBe(3 * 10 - 1);
      const state = JSON.parse(readFileSync(join(tmp.dir, '_state/region=apac/school_id=A1002.json'), 'utf8'));
      expect(state.resources.achievements).toBeUndefined();
      expect(state.resources.achievement_attributes.watermark).toEqual(expect.any(String));
      const m = readRunManifest(tmp.dir, summary.runId);
      expect(m.status).toBe('partial');
      // The next run exports it in full.
      const again = await runExport(cfg, { token: sb.tokens.full });
      expect(again.failures).toEqual([]);
      const t = readManifests(tmp.dir).find((x) => x.run_id === again.runId && x.school_id === 'A1002' && x.resource === 'achievements')!;
      expect(t.mode).toBe('full');
      expect(t.rows.achievements).toBe(120);
    } finally {
      sb.control.clearFaults();
      tmp.cleanup();
    }
  }, 120_000);

  it('an unreadable state file fails that school only, naming the file and the fix', async () => {
    const tmp = tempDir('badstate-');
    try {
      await exportOnce(sb, tmp.dir, { format: 'ndjson', resources: ['school_meta'] });
      writeFileSync(join(tmp.dir, '_state/region=uk/school_id=A1001.json'), '{ not json');
      const summary = await exportOnce(sb, tmp.dir, { format: 'ndjson', resources: ['school_meta'] });
      expect(summary.status).toBe('partial');
      expect(summary.failures).toEqual([
        expect.objectContaining({
          school_id: 'A1001',
          code: 'E_STATE',
          message: expect.stringMatching(
            /_state\/region=uk\/school_id=A1001\.json .*unreadable.*delete it to re-export that school in full/,
          ),
        }),
      ]);
      expect(summary.tasks.committed).toBe(2);
    } finally {
      tmp.cleanup();
    }
  });

  it('files roll over at the configured row count, and every file is listed', async () => {
    const tmp = tempDir('roll-');
    try {
      const summary = await exportOnce(sb, tmp.dir, { format: 'csv', max_file_rows: 50, resources: ['achievements'], schools: ['A1001'] });
      expect(summary.tables.achievements).toEqual(expect.objectContaining({ rows: 120, files: 3 }));
      const dir = join(tmp.dir, 'achievements/region=uk/school_id=A1001');
      const names = readdirSync(dir).sort();
      expect(names).toEqual([`${summary.runId}-0001.csv`, `${summary.runId}-0002.csv`, `${summary.runId}-0003.csv`]);
      const files = readManifests(tmp.dir).flatMap((t) => t.files.filter((f) => f.table === 'achievements'));
      expect(files.map((f) => f.rows)).toEqual([50, 50, 20]);
    } finally {
      tmp.cleanup();
    }
  });

  it('a resource the spec does not describe is exported from the pipeline file alone, flattened generically', async () => {
    const tmp = tempDir('custom-');
    try {
      const cfg = resolveRunConfig(undefined, {
        api_url: sb.url,
        domains: sb.domains,
        dest: tmp.dir,
        progress: 'none',
        format: 'ndjson',
        schools: ['A1001'],
        resources: ['recognition'],
        custom_resources: [{ name: 'recognition', path: '/schools/{school_id}/achievements', include: ['students'] }],
      });
      const summary = await runExport(cfg, { token: sb.tokens.full });
      expect(summary.failures).toEqual([]);
      expect(summary.tables.recognition?.rows).toBe(120);
      expect(summary.tables.recognition_students?.rows).toBeGreaterThan(0);
      const [spec] = selectResources(
        ['recognition'],
        [{ name: 'recognition', path: '/schools/{school_id}/achievements', include: ['students'] }],
      );
      const f = readManifests(tmp.dir)
        .flatMap((t) => t.files)
        .find((x) => x.table === 'recognition')!;
      const rows = await readRows(tmp.dir, f.path, compileFlattener(spec!).tables[0]!);
      const first = rows.find((r) => r.id === sb.control.records('A1001', 'achievements')[0]!.id)!;
      // Datetime objects are recognised by shape, nested objects joined with __.
      expect(first.updated_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
      expect(first.updated_at__timezone).toEqual(expect.any(String));
      expect(first._school_id).toBe('A1001');
    } finally {
      tmp.cleanup();
    }
  });

  it('an unknown resource name is a configuration error before any request', async () => {
    sb.control.clearRequests();
    await expect(exportOnce(sb, '/nonexistent-dir-never-created', { resources: ['achievemnts'] })).rejects.toThrow(
      /resources: unknown table "achievemnts" \(known: .*achievements/,
    );
    expect(sb.control.requests()).toEqual([]);
  });
});
