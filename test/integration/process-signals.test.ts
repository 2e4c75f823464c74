import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { readManifests, readRunManifest, warehouseState } from '../helpers/read-exports.ts';
import { canonical, expectedState, tempDir } from './helpers.ts';
import { runChild, walk } from './child-run.ts';

/**
 * The command as cron or Kubernetes runs it, in its own process: stopped by signals at a known
 * page (the sandbox holds that page's request), and killed outright mid-read, then resumed.
 */

function finalManifest(dir: string): { status: string; tasks: { status: string; school_id: string; resource: string }[] } {
  const names = readdirSync(join(dir, '_manifests')).filter((n) => n.endsWith('.json'));
  expect(names.length).toBe(1);
  return readRunManifest(dir, names[0]!.slice(0, -'.json'.length));
}

// 40 pages of 200: enough pages for a checkpoint every 5 and a kill halfway; more rows per page
// would only make each test slower, not test more
const BIG_ROWS = 8_000;
const BIG_PER_PAGE = '200';

describe('signals and kills', () => {
  let sb: Sandbox;
  beforeAll(async () => {
    sb = await startSandbox({ seed: 31, schools: 3, achievementsPerSchool: 400, bigSchools: { A1001: BIG_ROWS } });
  });
  afterAll(async () => {
    await sb?.close();
  });

  for (const [sig, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    it(`${sig} stops the run promptly: nothing half-written, manifest 'interrupted', each unfinished task once, exit ${code}`, async () => {
      const tmp = tempDir('sig-');
      try {
        sb.control.clearRequests();
        const held = sb.control.hold({ school: 'A1001', resource: 'achievements', page: 3 });
        const p = runChild(sb, ['--dest', tmp.dir, '--format', 'ndjson', '--per-page', '200', '--concurrency', '2', '--schools', 'A1001']);
        await held.reached;
        p.child.kill(sig);
        held.release();
        const r = await p.done;
        expect(r.code).toBe(code);
        const m = finalManifest(tmp.dir);
        expect(m.status).toBe('interrupted');
        const unfinished = m.tasks.filter((t) => t.status !== 'committed');
        expect(unfinished.some((t) => t.resource === 'achievements' && t.status === 'interrupted')).toBe(true);
        expect(unfinished.some((t) => t.status === 'not_started')).toBe(true);
        // The summary names each unfinished task once (stdout is JSON when piped).
        const summary = JSON.parse(r.stdout.trim().split('\n').pop()!);
        expect(summary.status).toBe('interrupted');
        const keys = summary.failures.map((f: { school_id: string; resource: string }) => `${f.school_id} ${f.resource}`);
        expect(new Set(keys).size).toBe(keys.length);
        // Nothing committed that is not listed; no temporary file left behind by the stopped tasks.
        const listed = new Set(readManifests(tmp.dir).flatMap((t) => t.files.map((f) => f.path)));
        const files = walk(tmp.dir).filter((f) => !f.startsWith('_'));
        expect(files.filter((f) => !listed.has(f))).toEqual([]);
      } finally {
        tmp.cleanup();
      }
    });
  }

  it('one signal is enough even while a request hangs: the request is abandoned, exit 130', async () => {
    const tmp = tempDir('sig2-');
    try {
      sb.control.clearRequests(); // page counts start again
      const held = sb.control.hold({ school: 'A1001', resource: 'achievements', page: 2 });
      const p = runChild(sb, [
        '--dest',
        tmp.dir,
        '--format',
        'ndjson',
        '--per-page',
        '200',
        '--schools',
        'A1001',
        '--resources',
        'achievements',
      ]);
      await held.reached;
      p.child.kill('SIGINT'); // the held request is never answered while the run stops
      const r = await p.done;
      expect(r.code).toBe(130);
      expect(finalManifest(tmp.dir).status).toBe('interrupted');
      held.release();
    } finally {
      tmp.cleanup();
    }
  });

  for (const variant of [
    'resumes from its saved cursor',
    'restarts from page 1 when the cursor is refused',
    'resumes after rows changed',
  ]) {
    it(`a task of 40 pages killed (SIGKILL) halfway ${variant}, and the warehouse then equals the sandbox`, async () => {
      const tmp = tempDir('kill-');
      const args = ['--dest', tmp.dir, '--format', 'parquet', '--per-page', BIG_PER_PAGE, '--schools', 'A1001'];
      const interval = 5; // checkpoint every 5 pages of 40
      try {
        sb.control.clearRequests(); // page counts start again
        const held = sb.control.hold({ school: 'A1001', resource: 'achievements', page: 22 }); // page 21 is asked for only after page 20's checkpoint
        const p = runChild(sb, [...args, '--checkpoint-pages', String(interval), '--resources', 'achievements']);
        await held.reached;
        p.child.kill('SIGKILL');
        held.release();
        expect((await p.done).signal).toBe('SIGKILL');
        const state = JSON.parse(readFileSync(join(tmp.dir, '_state/region=uk/school_id=A1001.json'), 'utf8'));
        const cp = state.resources.achievements.checkpoint;
        expect(cp.pages).toBe(20);

        if (variant.includes('refused')) sb.control.invalidateCursors();
        if (variant.includes('changed')) {
          const ids = sb.control.records('A1001', 'achievements').map((r) => (r as { id: string }).id);
          sb.control.update('A1001', 'achievements', ids[5]!, { comment: 'changed behind the saved cursor' });
          sb.control.update('A1001', 'achievements', ids[BIG_ROWS - 1_000]!, { comment: 'changed ahead of the saved cursor' });
          sb.control.remove('A1001', 'achievements', ids[7]!);
        }
        sb.control.clearRequests();
        const again = runChild(sb, [...args, '--checkpoint-pages', String(interval), '--resources', 'achievements,deletions']);
        const r = await again.done;
        expect(r.code, r.stderr).toBe(0);
        const pages = sb.control.requests().filter((q) => q.path.startsWith('/v1.0/schools/A1001/achievements')).length;
        if (variant.includes('refused')) expect(pages).toBeLessThanOrEqual(1 + 40 + 1);
        else expect(pages).toBeLessThanOrEqual(40 - 20 + interval + 1);

        const db = tmp.siblingDb;
        const wh = await warehouseState(tmp.dir, db);
        const want = await expectedState(sb, ['A1001'], () => 'uk');
        for (const table of ['achievements', 'achievement_students', 'achievement_employees']) {
          expect(canonical(wh.get(table) ?? []), table).toEqual(canonical(want.get(table) ?? []));
        }
      } finally {
        tmp.cleanup();
      }
    });
  }
});
