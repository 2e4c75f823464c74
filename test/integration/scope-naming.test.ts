import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { PipelineConfig } from '../../src/config/schema.ts';
import { runExport } from '../../src/pipeline/run.ts';
import type { Reporter, RunEvent } from '../../src/pipeline/progress.ts';
import { startSandbox, type PropertyPermissionNaming, type Sandbox } from '../../src/sandbox/index.ts';
import { warehouseLoad } from '../../src/warehouse/commands.ts';
import { readManifests } from '../helpers/read-exports.ts';
import { currentTables } from '../warehouse/tables.ts';
import { sandboxConfig, tempDir } from './helpers.ts';

/**
 * Issue 20, item 1: property scopes are read from the service's own words. The sandbox names its
 * property permissions another way (propertyPermissionNaming); with the full token the exporter
 * claims nothing masked whatever the naming, with the limited token it claims exactly the
 * guarded columns once a permission naming them is known, and never claims on a guess.
 */
const BOTH = { achievements: ['comment', 'parents_notified'] };

function recorder(): { events: RunEvent[]; reporter: Reporter } {
  const events: RunEvent[] = [];
  return { events, reporter: { emit: (e) => void events.push(e), close() {} } };
}

let sb: Sandbox | undefined;
const tmp = tempDir('scope-naming-');
afterEach(async () => {
  await sb?.close();
  sb = undefined;
});
afterAll(() => tmp.cleanup());

async function setUp(naming: PropertyPermissionNaming): Promise<{ sb: Sandbox; dest: string }> {
  sb = await startSandbox({ seed: 9, schools: 2, achievementsPerSchool: 40, propertyPermissionNaming: naming });
  return { sb, dest: join(tmp.dir, `${naming}-${Math.random().toString(36).slice(2, 8)}`) };
}

const run = (s: Sandbox, dest: string, token: string, extra: PipelineConfig = {}, reporter?: Reporter) =>
  runExport(sandboxConfig(s, dest, { format: 'ndjson', resources: ['achievements'], ...extra }), {
    token,
    ...(reporter ? { reporter } : {}),
  });

describe('property permissions named as the service names them', () => {
  it.each(['dotted', 'underscore', 'singular', 'kebab', 'upper'] as const)(
    '%s: the full token claims nothing, the limited token claims exactly the guarded columns, the warehouse keeps the values',
    async (naming) => {
      const { sb, dest } = await setUp(naming);
      const full = await run(sb, dest, sb.tokens.full);
      expect(full.failures).toEqual([]);
      expect(full.scopeMasked).toEqual({}); // the bug: every school was said to lack the scope
      expect(full.notes.filter((n) => /cannot tell/.test(n))).toEqual([]);
      const fullTasks = readManifests(dest).filter((t) => t.run_id === full.runId);
      expect(fullTasks.every((t) => t.scope_masked === undefined && JSON.stringify(t.scope_guarded) === JSON.stringify(BOTH))).toBe(true);

      const events = recorder();
      const limited = await run(sb, dest, sb.tokens.limited, { full_refresh: true }, events.reporter);
      expect(limited.failures).toEqual([]);
      expect(limited.scopeMasked).toEqual({
        A1001: ['achievements.comment', 'achievements.parents_notified'],
        A1002: ['achievements.comment', 'achievements.parents_notified'],
      });
      expect(events.events.filter((e) => e.event === 'scope_masked')).toHaveLength(2);
      const limitedTasks = readManifests(dest).filter((t) => t.run_id === limited.runId);
      expect(limitedTasks.every((t) => JSON.stringify(t.scope_masked) === JSON.stringify(BOTH))).toBe(true);

      // After a full-token run and a limited-token full refresh, the warehouse holds the service's values.
      const db = join(tmp.dir, `${naming}.duckdb`);
      await warehouseLoad({ dest, into: `duckdb:${db}` });
      const rows = (await currentTables(db)).get('achievements') ?? [];
      const got = new Map(rows.map((r) => [`${String(r._school_id)}/${String(r.id)}`, [r.comment, r.parents_notified]]));
      const want = new Map<string, unknown[]>();
      for (const school of ['A1001', 'A1002'])
        for (const r of sb.control.records(school, 'achievements') as { id: string; comment: unknown; parents_notified: unknown }[])
          want.set(`${school}/${r.id}`, [r.comment, r.parents_notified]);
      expect([...want.values()].filter(([c]) => c !== null).length).toBeGreaterThan(10);
      expect(got).toEqual(want);
    },
  );

  it('opaque names: nothing is guessed; the run says once it cannot tell and claims nothing, until property_scopes names them', async () => {
    const { sb, dest } = await setUp('opaque');
    const events = recorder();
    const limited = await run(sb, dest, sb.tokens.limited, {}, events.reporter);
    expect(limited.scopeMasked).toEqual({});
    expect(events.events.filter((e) => e.event === 'scope_masked')).toEqual([]);
    const warned = events.events.filter((e) => e.event === 'scope_undetermined');
    expect(warned).toHaveLength(1); // once per run, not per school
    expect(limited.notes.filter((n) => /cannot tell/.test(n))).toEqual([
      expect.stringContaining(
        `cannot tell whether the token's scopes hide achievements.comment, achievements.parents_notified: no permission in the schools' lists names them`,
      ),
    ]);
    expect(limited.notes.join('\n')).toMatch(/set property_scopes \(e\.g\. \{"achievements\.comment":/);

    // The full token's lists name them too opaquely: still nothing claimed, still said once.
    const full = await run(sb, dest, sb.tokens.full);
    expect(full.scopeMasked).toEqual({});
    expect(full.notes.filter((n) => /cannot tell/.test(n))).toHaveLength(1);

    // Configured, the names are known: the full token claims nothing, the limited token the masked columns.
    const mapping = { 'achievements.comment': 'ach_note_3.read', 'achievements.parents_notified': 'ACH_NOTE_4.read' };
    const configured = await run(sb, dest, sb.tokens.full, { property_scopes: mapping });
    expect(configured.scopeMasked).toEqual({});
    expect(configured.notes.filter((n) => /cannot tell/.test(n))).toEqual([]);
    const masked = await run(sb, dest, sb.tokens.limited, { property_scopes: mapping, full_refresh: true });
    expect(masked.scopeMasked.A1002).toEqual(['achievements.comment', 'achievements.parents_notified']);
  });

  it('learned names are remembered at the destination; a configured name covers only its own property', async () => {
    const { sb, dest } = await setUp('underscore');
    const first = await run(sb, dest, sb.tokens.full);
    expect(first.scopeMasked).toEqual({});
    expect(JSON.parse(readFileSync(join(dest, '_state/_property_scopes.json'), 'utf8'))).toEqual({
      identities: {
        'achievements.comment': ['achievement_comment.read'],
        'achievements.parents_notified': ['achievement_parents_notified.read'],
      },
    });
    // Another destination, the limited token, the name of one property configured: only it is
    // claimed; the other is undetermined (said once); nothing else.
    const other = join(tmp.dir, 'configured-one');
    const limited = await run(sb, other, sb.tokens.limited, { property_scopes: { 'achievements.comment': 'achievement_comment.read' } });
    expect(limited.scopeMasked).toEqual({ A1001: ['achievements.comment'], A1002: ['achievements.comment'] });
    expect(limited.notes.filter((n) => /cannot tell/.test(n))).toEqual([expect.stringContaining('hide achievements.parents_notified:')]);
  });
});
