import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runExport } from '../../src/pipeline/run.ts';
import type { Reporter, RunEvent } from '../../src/pipeline/progress.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { openSink } from '../../src/sink/index.ts';
import { applyWebhookEvent } from '../../src/webhooks/apply.ts';
import { readManifests, warehouseState } from '../helpers/read-exports.ts';
import { sandboxConfig, tempDir } from './helpers.ts';

/** Issue 9's silent failures, each made loud, exact and survivable. */
function walk(dir: string, base = ''): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(join(dir, e.name), `${base}${e.name}/`) : [`${base}${e.name}`],
  );
}

function recorder(): { events: RunEvent[]; reporter: Reporter } {
  const events: RunEvent[] = [];
  return { events, reporter: { emit: (e) => void events.push(e), close() {} } };
}

describe('failure modes', () => {
  let sb: Sandbox;
  beforeAll(async () => {
    sb = await startSandbox({ seed: 21, schools: 3, achievementsPerSchool: 300 });
  });
  afterAll(async () => {
    await sb?.close();
  });

  it('a purge on revoke that arrives while a run reads the school sticks: nothing of the school remains, and loaders load none of it', async () => {
    const tmp = tempDir('purge-race-');
    try {
      const first = await runExport(sandboxConfig(sb, tmp.dir, { format: 'ndjson' }), { token: sb.tokens.full });
      expect(first.failures).toEqual([]);
      // The second run is held at a known page of A1001's achievements; the revocation (as the
      // receiver applies it, with --purge-on-revoke) lands right there, then the run goes on.
      const held = sb.control.hold({ school: 'A1001', resource: 'achievements', page: 2 });
      const run = runExport(sandboxConfig(sb, tmp.dir, { format: 'ndjson', full_refresh: true, per_page: 50 }), { token: sb.tokens.full });
      await held.reached;
      const sink = await openSink(tmp.dir);
      const revoked = {
        payload_type: 'accessRevoked' as const,
        school_id: 'A1001',
        school_name: 'x',
        school_la_code: '1',
        school_urn: '1',
        school_establishment_number: '1',
        revoke_reason: 'test',
      };
      await applyWebhookEvent(sink, revoked, { purgeOnRevoke: true });
      await sink.close();
      held.release();
      const second = await run;
      expect(second.status).toBe('partial');
      const a1001 = second.failures.filter((f) => f.school_id === 'A1001');
      expect(a1001.length).toBeGreaterThan(0);
      expect(a1001.every((f) => f.code === 'E_PURGED' || f.code === 'E_ABORTED')).toBe(true);

      // Only the receiver's own records (directive, event log) name the school afterwards.
      const left = walk(tmp.dir).filter((p) => p.includes('school_id=A1001') && !p.startsWith('_state/_'));
      expect(left).toEqual([]);
      const db = tmp.siblingDb;
      const wh = await warehouseState(tmp.dir, db);
      for (const [table, rows] of wh) expect(rows.filter((r) => r._school_id === 'A1001').length, table).toBe(0);
      expect((wh.get('achievements') ?? []).length).toBeGreaterThan(0); // the other schools are there
    } finally {
      tmp.cleanup();
    }
  });

  it('a less-privileged token is said out loud: masked columns are claimed only once their permission is known, warned once per school, recorded per task, and the next read with the scope reads them in full', async () => {
    const tmp = tempDir('scope-');
    try {
      const cfg = () => sandboxConfig(sb, tmp.dir, { format: 'ndjson', resources: ['achievements'] });
      // A fresh destination and a token that lacks the scopes: no list names the permissions, so
      // the run cannot tell whether nulls are masked; it says so once and claims nothing.
      const first = recorder();
      const unknown = await runExport(cfg(), { token: sb.tokens.limited, reporter: first.reporter });
      expect(first.events.filter((e) => e.event === 'scope_masked')).toEqual([]);
      expect(first.events.filter((e) => e.event === 'scope_undetermined')).toHaveLength(1);
      expect(unknown.scopeMasked).toEqual({});
      expect(unknown.notes.filter((n) => /cannot tell whether the token's scopes hide/.test(n))).toEqual([
        expect.stringMatching(/achievements\.comment, achievements\.parents_notified: .*property_scopes/),
      ]);
      const guardedOnly = readManifests(tmp.dir).filter((t) => t.run_id === unknown.runId && t.resource === 'achievements');
      expect(guardedOnly.length).toBe(3);
      expect(guardedOnly.every((t) => t.scope_masked === undefined)).toBe(true);
      expect(
        guardedOnly.every((t) => JSON.stringify(t.scope_guarded) === JSON.stringify({ achievements: ['comment', 'parents_notified'] })),
      ).toBe(true);

      // The full token's lists name them: learned, and remembered at the destination.
      const full = await runExport(cfg(), { token: sb.tokens.full });
      expect(full.scopeMasked).toEqual({});
      expect(full.notes.some((n) => /cannot tell/.test(n))).toBe(false);
      expect(JSON.parse(readFileSync(join(tmp.dir, '_state/_property_scopes.json'), 'utf8')).identities).toMatchObject({
        'achievements.comment': ['achievements.comment.read'],
        'achievements.parents_notified': ['achievements.parents_notified.read'],
      });

      // Now a limited read is known to be masked: warned once per school, recorded per task.
      const { events, reporter } = recorder();
      const limited = await runExport(sandboxConfig(sb, tmp.dir, { format: 'ndjson', resources: ['achievements'], full_refresh: true }), {
        token: sb.tokens.limited,
        reporter,
      });
      const masked = events.filter((e) => e.event === 'scope_masked');
      expect(masked.map((e) => (e as { school_id: string }).school_id).sort()).toEqual(['A1001', 'A1002', 'A1003']);
      expect(limited.scopeMasked.A1001).toEqual(['achievements.comment', 'achievements.parents_notified']);
      const tasks = readManifests(tmp.dir).filter((t) => t.run_id === limited.runId && t.resource === 'achievements');
      expect(tasks.every((t) => JSON.stringify(t.scope_masked) === JSON.stringify({ achievements: ['comment', 'parents_notified'] }))).toBe(
        true,
      );

      const again = await runExport(cfg(), { token: sb.tokens.full });
      expect(again.scopeMasked).toEqual({});
      const reread = readManifests(tmp.dir).filter((t) => t.run_id === again.runId);
      expect(reread.every((t) => t.mode === 'full' && t.scope_masked === undefined)).toBe(true);
    } finally {
      tmp.cleanup();
    }
  });

  it('a run asked for schools it cannot export says so and fails', async () => {
    const tmp = tempDir('none-');
    try {
      const s = await runExport(sandboxConfig(sb, tmp.dir, { schools: ['A9999'] }), { token: sb.tokens.full });
      expect(s.status).toBe('failed');
      expect(s.notes.join('\n')).toMatch(/none of the schools asked for \(--schools A9999\)/);
      expect(s.failures.map((f) => f.school_id)).toEqual(['A9999']);
    } finally {
      tmp.cleanup();
    }
  });

  it('a revocation the receiver never heard is reconciled by the next run: the school is skipped and, with purge_on_revoke, purged', async () => {
    const tmp = tempDir('reconcile-');
    const local = await startSandbox({ seed: 22, schools: 3, achievementsPerSchool: 50 });
    try {
      const lists = () => local.control.requests().filter((r) => /\/schools\/(revoked|declined)/.test(r.path)).length;
      const first = await runExport(sandboxConfig(local, tmp.dir, { format: 'ndjson' }), { token: local.tokens.full });
      expect(first.failures).toEqual([]);
      // every school held here is still approved: nothing to reconcile, neither list is asked
      const again = await runExport(sandboxConfig(local, tmp.dir, { format: 'ndjson' }), { token: local.tokens.full });
      expect(again.failures).toEqual([]);
      expect(lists()).toBe(0);
      await local.control.setAccess('A1002', 'revoked'); // no webhook URL: nobody hears it
      const second = await runExport(sandboxConfig(local, tmp.dir, { format: 'ndjson', purge_on_revoke: true }), {
        token: local.tokens.full,
      });
      expect(lists()).toBe(2); // A1002 held here and gone from /schools: both lists asked
      expect(second.notes.join('\n')).toMatch(/school A1002 is listed by \/schools\/revoked: treated as accessRevoked .*purged/);
      expect(readManifests(tmp.dir).some((t) => t.run_id === second.runId && t.school_id === 'A1002')).toBe(false);
      expect(walk(tmp.dir).filter((p) => p.includes('school_id=A1002') && !p.startsWith('_state/_'))).toEqual([]);
      const directive = JSON.parse(readFileSync(join(tmp.dir, '_state/_directives/school_id=A1002.json'), 'utf8'));
      expect(directive.deactivated.event).toMatch(/^accessRevoked/);
      // A1002 is stopped by its directive now: the lists are not asked again for it
      const third = await runExport(sandboxConfig(local, tmp.dir, { format: 'ndjson' }), { token: local.tokens.full });
      expect(third.failures).toEqual([]);
      expect(lists()).toBe(2);
    } finally {
      await local.close();
      tmp.cleanup();
    }
  });
});
