import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { runExport } from '../../src/pipeline/run.ts';
import { currentState, readManifests, readRunManifest, warehouseState } from '../helpers/read-exports.ts';
import { allSchemas, approvedSchools, canonical, expectedState, sandboxConfig, tempDir } from './helpers.ts';
import { runChild, walk } from './child-run.ts';

describe('separate processes', () => {
  let sb: Sandbox;
  beforeAll(async () => {
    sb = await startSandbox({ seed: 11, schools: 5, achievementsPerSchool: 400 });
  });
  afterAll(async () => {
    await sb?.close();
  });

  it('a run killed with SIGKILL mid-task loses nothing, and no file it left behind is listed', async () => {
    const tmp = tempDir('kill-');
    try {
      const p = runChild(sb, ['--dest', tmp.dir, '--format', 'ndjson', '--per-page', '25', '--concurrency', '2']);
      // Kill once some task has committed (its JSON log line says so) but the run is not finished:
      // the sandbox holds a later page until then.
      const held = sb.control.hold({ school: 'A1003', resource: 'achievements', page: 3 });
      await p.line(/"event":"task_done"/);
      await held.reached;
      p.child.kill('SIGKILL');
      const killed = await p.done;
      held.release();
      expect(killed.signal).toBe('SIGKILL');
      const before = readManifests(tmp.dir);
      expect(before.length).toBeGreaterThan(0);
      expect(walk(join(tmp.dir, '_manifests')).some((f) => /^[^/]+\.json$/.test(f))).toBe(false); // no whole-run manifest

      // A warehouse load now applies the killed run's committed parts (their state advanced, so
      // the next incremental run will not read those rows again).
      const db = tmp.siblingDb;
      const partial = await warehouseState(tmp.dir, db);
      const committedAch = before.filter((t) => t.resource === 'achievements').reduce((n, t) => n + (t.rows.achievements ?? 0), 0);
      expect(partial.get('achievements')?.length ?? 0).toBe(committedAch);
      const committedSchools = before.filter((t) => t.resource === 'schools').length;
      expect(committedSchools + committedAch).toBeGreaterThan(0);
      expect(partial.get('schools')?.length ?? 0).toBe(committedSchools);

      const again = await runExport(sandboxConfig(sb, tmp.dir, { format: 'ndjson' }), { token: sb.tokens.full });
      expect(again.failures).toEqual([]);

      const listed = new Set(readManifests(tmp.dir).flatMap((t) => t.files.map((f) => f.path)));
      for (const t of readManifests(tmp.dir)) {
        for (const f of t.files) {
          const bytes = readFileSync(join(tmp.dir, f.path));
          expect(createHash('sha256').update(bytes).digest('hex')).toBe(f.sha256);
        }
      }
      // Leftovers of the killed run are temporary names, never listed.
      const leftovers = walk(tmp.dir).filter((f) => !f.startsWith('_') && !listed.has(f));
      for (const f of leftovers) expect(f).toMatch(/\.tmp$/);

      const ids = [...new Set(readManifests(tmp.dir).map((t) => t.school_id))];
      const regions = new Map(readManifests(tmp.dir).map((t) => [t.school_id, t.region]));
      const expected = await expectedState(sb, ids, (id) => regions.get(id)!);
      const actual = await currentState(tmp.dir, allSchemas());
      for (const [table, rows] of expected)
        expect({ table, rows: canonical(actual.get(table) ?? []) }).toEqual({ table, rows: canonical(rows) });
      const warehouse = await warehouseState(tmp.dir, db);
      for (const [table, rows] of expected)
        expect({ table, warehouse: canonical(warehouse.get(table) ?? []) }).toEqual({ table, warehouse: canonical(rows) });
    } finally {
      sb.control.latency(0);
      tmp.cleanup();
    }
  });

  it('N shards as separate processes export every school exactly once', async () => {
    const tmp = tempDir('shards-');
    try {
      const N = 3;
      const runs = Array.from({ length: N }, (_, i) =>
        runChild(sb, ['--dest', tmp.dir, '--format', 'csv', '--shard', `${i}/${N}`, '--resources', 'schools,achievements']),
      );
      const results = await Promise.all(runs.map((r) => r.done));
      for (const r of results) expect(r.code, r.stderr).toBe(0);
      const manifests = walk(join(tmp.dir, '_manifests')).filter((f) => /^[^/]+\.json$/.test(f));
      expect(manifests.length).toBe(N);
      const schoolsByShard = manifests.map((m) => {
        const j = readRunManifest(tmp.dir, m.slice(0, -'.json'.length));
        return new Set<string>(j.tasks.map((t: { school_id: string }) => t.school_id));
      });
      const all = schoolsByShard.flatMap((s) => [...s]);
      expect(new Set(all).size).toBe(all.length); // no school in two shards
      const approved = (await approvedSchools(sb)).map((s) => s.id);
      expect(approved.length).toBeGreaterThan(N);
      expect(new Set(all)).toEqual(new Set(approved));
      const states = walk(join(tmp.dir, '_state')).filter((f) => f.startsWith('region=') && f.endsWith('.json'));
      expect(states.length).toBe(approved.length);
    } finally {
      tmp.cleanup();
    }
  });

  it('exits 2 with one line for a bad pipeline file, and never prints the token', async () => {
    const tmp = tempDir('bad-');
    try {
      const p = runChild(sb, ['--dest', tmp.dir, '--format', 'ndjson', '--concurrency', '0']);
      const r = await p.done;
      expect(r.code).toBe(2);
      expect(r.stderr.trim().split('\n').length).toBe(1);
      expect(r.stderr).toMatch(/concurrency/);
      expect(r.stderr + r.stdout).not.toContain(sb.tokens.full);
    } finally {
      tmp.cleanup();
    }
  });
});
