import { mkdirSync, readFileSync, utimesSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runExport } from '../../src/pipeline/run.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { runChild, tempFiles } from './child-run.ts';
import { sandboxConfig, tempDir } from './helpers.ts';

/**
 * Issue 9, "Clean failure paths": a killed run leaves temporary files behind; the next run
 * removes those of runs that are no longer running, and never those of a run still writing.
 */
describe('temporary files of dead and live runs', () => {
  let sb: Sandbox;
  // A1001 is in shard 0 of 2, A1002 in shard 1.
  const args = (dir: string) => ['--dest', dir, '--format', 'ndjson', '--resources', 'achievements', '--per-page', '50'];

  beforeAll(async () => {
    sb = await startSandbox({ seed: 43, schools: 2, achievementsPerSchool: 400 });
  });
  afterAll(async () => {
    await sb?.close();
  });

  it('the next run removes what a run killed (SIGKILL) mid-task left behind', async () => {
    const tmp = tempDir('sweep-dead-');
    try {
      sb.control.clearRequests();
      const hold = sb.control.hold({ school: 'A1001', resource: 'achievements', page: 3 });
      const killed = runChild(sb, [...args(tmp.dir), '--schools', 'A1001']);
      await hold.reached; // two pages are in the task's temporary file, the third is on its way
      const left = tempFiles(tmp.dir);
      expect(left.length).toBeGreaterThan(0);
      expect(left.every((f) => f.includes('~'))).toBe(true); // each names the run that wrote it
      killed.child.kill('SIGKILL');
      hold.release();
      expect((await killed.done).signal).toBe('SIGKILL');
      expect(tempFiles(tmp.dir)).toEqual(left);
      expect(existsSync(join(tmp.dir, '_state/_locks/run.json'))).toBe(true); // the dead run's lease

      // Temp files from before owners were written into names: removed once a day old, kept before.
      const dir = join(tmp.dir, 'achievements/region=uk/school_id=A1001');
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, '.20240101T000000.000Z-old-0001.ndjson.0123456789ab.tmp'), 'x');
      const twoDaysAgo = new Date(Date.now() - 2 * 24 * 3600_000);
      utimesSync(join(dir, '.20240101T000000.000Z-old-0001.ndjson.0123456789ab.tmp'), twoDaysAgo, twoDaysAgo);
      writeFileSync(join(dir, '.20240101T000000.000Z-new-0001.ndjson.ba9876543210.tmp'), 'x');

      const next = await runExport(sandboxConfig(sb, tmp.dir, { format: 'ndjson', resources: ['school_meta'], schools: ['A1002'] }), {
        token: sb.tokens.full,
      });
      expect(next.status).toBe('ok');
      expect(tempFiles(tmp.dir)).toEqual(['achievements/region=uk/school_id=A1001/.20240101T000000.000Z-new-0001.ndjson.ba9876543210.tmp']);
      expect(existsSync(join(tmp.dir, '_state/_locks/run.json'))).toBe(false);
    } finally {
      tmp.cleanup();
    }
  });

  it('a run leaves alone the temporary files of a run still writing (holding its lease on another shard)', async () => {
    const tmp = tempDir('sweep-live-');
    try {
      sb.control.clearRequests();
      const hold = sb.control.hold({ school: 'A1001', resource: 'achievements', page: 3 });
      const live = runChild(sb, [...args(tmp.dir), '--shard', '0/2']);
      await hold.reached;
      const writing = tempFiles(tmp.dir);
      expect(writing.length).toBeGreaterThan(0);
      const liveRunId = (JSON.parse(readFileSync(join(tmp.dir, '_state/_locks/run-s0of2.json'), 'utf8')) as { run_id: string }).run_id;
      expect(writing.every((f) => f.includes(`~${liveRunId}~`))).toBe(true);

      const other = await runExport(sandboxConfig(sb, tmp.dir, { format: 'ndjson', resources: ['achievements'], shard: '1/2' }), {
        token: sb.tokens.full,
      });
      expect(other.status).toBe('ok');
      expect(tempFiles(tmp.dir)).toEqual(writing);

      hold.release();
      const ended = await live.done;
      expect(ended.code, ended.stderr).toBe(0); // its temp files were there to be committed
      expect(JSON.parse(ended.stdout)).toMatchObject({ status: 'ok', tables: { achievements: { rows: 400 } } });
      expect(tempFiles(tmp.dir)).toEqual([]);
    } finally {
      tmp.cleanup();
    }
  });
});
