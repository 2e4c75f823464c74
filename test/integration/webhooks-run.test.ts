import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { startWebhookReceiver } from '../../src/webhooks/index.ts';
import { openSink } from '../../src/sink/index.ts';
import type { Sink } from '../../src/sink/types.ts';
import { readManifests, currentState, warehouseState } from '../helpers/read-exports.ts';
import { allSchemas, canonical, exportOnce, expectedState, tempDir } from './helpers.ts';

/**
 * The webhook receiver and the exporter together, driven by the sandbox's own webhooks: an
 * approved school is exported in full by the next run; a revoked one is skipped and, with purge,
 * its files are gone; after a migration the next run re-extracts the school and holds only the
 * new ids.
 */
describe('webhooks drive the next run', () => {
  let sb: Sandbox;
  let receiver: { url: string; close(): Promise<void> };
  let sink: Sink;
  const tmp = tempDir('wh-run-');
  const tokens = tempDir('wh-tokens-');

  beforeAll(async () => {
    sink = await openSink(tmp.dir);
    receiver = await startWebhookReceiver({
      sink,
      secret: 'a-long-enough-test-secret-123',
      tokenDir: tokens.dir,
      purgeOnRevoke: true,
      log: () => {},
    });
    sb = await startSandbox({ seed: 5, schools: 3, achievementsPerSchool: 80, webhookUrl: receiver.url });
    const first = await exportOnce(sb, tmp.dir, { format: 'ndjson' });
    expect(first.failures).toEqual([]);
  });
  afterAll(async () => {
    await sb?.close();
    await receiver?.close();
    tmp.cleanup();
    tokens.cleanup();
  });

  const schoolsIn = (runId: string) =>
    new Set(
      readManifests(tmp.dir)
        .filter((t) => t.run_id === runId)
        .map((t) => t.school_id),
    );

  it('a school approved through the sandbox is fully exported by the next run', async () => {
    await sb.control.setAccess('A9001', 'approved');
    await sb.control.flushWebhooks();
    const directive = JSON.parse(readFileSync(join(tmp.dir, '_state/_directives/school_id=A9001.json'), 'utf8'));
    expect(directive.force_full_seq).toBe(1);
    const run = await exportOnce(sb, tmp.dir, { format: 'ndjson' });
    expect(run.failures).toEqual([]);
    const tasks = readManifests(tmp.dir).filter((t) => t.run_id === run.runId && t.school_id === 'A9001');
    expect(tasks.length).toBeGreaterThan(5);
    expect(tasks.every((t) => t.mode === 'full')).toBe(true);
    // Already-exported schools stay incremental.
    expect(
      readManifests(tmp.dir).filter((t) => t.run_id === run.runId && t.school_id === 'A1001' && t.resource === 'achievements')[0]!.mode,
    ).toBe('incremental');
  });

  it('a revoked school is skipped, and with purge its files and state are gone', async () => {
    expect(readdirSync(join(tmp.dir, 'achievements/region=uk')).some((d) => d === 'school_id=A1001')).toBe(true);
    await sb.control.setAccess('A1001', 'revoked');
    await sb.control.flushWebhooks();
    const left = (dir: string): string[] =>
      existsSync(dir)
        ? readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? left(join(dir, e.name)) : [e.name]))
        : [];
    expect(left(join(tmp.dir, 'achievements/region=uk/school_id=A1001'))).toEqual([]);
    // Only the directive that keeps runs away from the school, and the receiver's dedupe record, remain.
    const walkAll = (dir: string, base = ''): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? walkAll(join(dir, e.name), base + e.name + '/') : [base + e.name],
      );
    expect(walkAll(tmp.dir).filter((f) => f.includes('A1001') && !f.includes('purge'))).toEqual([
      '_state/_directives/school_id=A1001.json',
      '_state/_webhooks/last/school_id=A1001.json',
    ]);
    expect(existsSync(join(tmp.dir, '_state/region=uk/school_id=A1001.json'))).toBe(false);
    const purge = readdirSync(join(tmp.dir, '_manifests')).filter((f) => f.includes('-purge-'));
    expect(purge.length).toBe(1);
    expect(JSON.parse(readFileSync(join(tmp.dir, '_manifests', purge[0]!), 'utf8')).purged[0].school_id).toBe('A1001');

    const run = await exportOnce(sb, tmp.dir, { format: 'ndjson' });
    expect(run.failures).toEqual([]);
    expect(schoolsIn(run.runId).has('A1001')).toBe(false);
    // Even if the service still listed it, the directive keeps the run away from it.
    await sb.control.setAccess('A1001', 'approved');
    await sb.control.flushWebhooks();
    await sb.control.setAccess('A1001', 'revoked');
    await sb.control.flushWebhooks();
    const after = await exportOnce(sb, tmp.dir, { format: 'ndjson', schools: ['A1001'] });
    expect(schoolsIn(after.runId).has('A1001')).toBe(false);
  });

  it('after a migration the next run re-extracts the school and holds only the new ids', async () => {
    const before = sb.control.records('A1002', 'achievements').map((r) => (r as { id: string }).id);
    await sb.control.migrate('A1002', 'scheduled');
    await sb.control.migrate('A1002', 'completed');
    await sb.control.flushWebhooks();
    const now = sb.control.records('A1002', 'achievements').map((r) => (r as { id: string }).id);
    expect(now.some((id) => before.includes(id))).toBe(false);
    const run = await exportOnce(sb, tmp.dir, { format: 'ndjson' });
    expect(run.failures).toEqual([]);
    const tasks = readManifests(tmp.dir).filter((t) => t.run_id === run.runId && t.school_id === 'A1002');
    expect(tasks.every((t) => t.mode === 'full')).toBe(true);
    const state = await currentState(tmp.dir, allSchemas());
    const held = (state.get('achievements') ?? []).filter((r) => r._school_id === 'A1002').map((r) => String(r.id));
    expect(held.sort()).toEqual([...now].sort());
    // The warehouse, loaded from every run so far (including the purge), holds only the new ids.
    const warehouse = await warehouseState(tmp.dir, join(tokens.dir, 'wh.duckdb'));
    const inWarehouse = (warehouse.get('achievements') ?? []).filter((r) => r._school_id === 'A1002').map((r) => String(r.id));
    expect(inWarehouse.sort()).toEqual([...now].sort());
    expect((warehouse.get('achievements') ?? []).some((r) => r._school_id === 'A1001')).toBe(false);
    const expected = await expectedState(sb, ['A1002'], () => 'apac');
    for (const [table, rows] of expected) {
      const got = (state.get(table) ?? []).filter((r) => r._school_id === 'A1002');
      expect({ table, rows: canonical(got) }).toEqual({ table, rows: canonical(rows) });
    }
  });
});
