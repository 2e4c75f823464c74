import { closeSync, existsSync, openSync, statSync, symlinkSync, truncateSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runExport } from '../../src/pipeline/run.ts';
import type { Reporter, RunEvent } from '../../src/pipeline/progress.ts';
import type { RunSummary } from '../../src/pipeline/summary.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { readManifests, readRunManifest } from '../helpers/read-exports.ts';
import { openFilesUnder, readOnlyDir, smallDisk, type Mounted } from '../sink/mounts.ts';
import { runChild, tempFiles, walk } from './child-run.ts';
import { sandboxConfig, tempDir } from './helpers.ts';

/**
 * Issue 9: failures that are loud, exact and survivable. A destination that cannot be used is a
 * configuration error before any request; a destination that fills up mid-run still ends with a
 * summary and a manifest (or says exactly why there is none), leaks no descriptor and leaves no
 * temporary file; the exit status tells cron what happened.
 */

/** Fills the file system under dir to the last byte (synchronously: it runs inside a request hook or an event). */
function fillUp(dir: string): void {
  const fd = openSync(join(dir, 'filler'), 'a');
  try {
    for (const size of [64 * 1024, 4096, 1]) {
      const chunk = Buffer.alloc(size, 0x66);
      for (;;) {
        try {
          writeSync(fd, chunk);
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== 'ENOSPC') throw e;
          break;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
}

function recorder(on?: (e: RunEvent) => void): { events: RunEvent[]; reporter: Reporter } {
  const events: RunEvent[] = [];
  return {
    events,
    reporter: {
      emit: (e) => {
        events.push(e);
        on?.(e);
      },
      close() {},
    },
  };
}

describe('run failures', () => {
  let sb: Sandbox;
  const mounts: Mounted[] = [];
  const tmps: { cleanup(): void }[] = [];
  const scratch = () => {
    const t = tempDir('run-fail-');
    tmps.push(t);
    return t.dir;
  };

  beforeAll(async () => {
    sb = await startSandbox({ seed: 47, schools: 2, achievementsPerSchool: 1500 });
  });
  afterEach(async () => {
    for (const m of mounts.splice(0)) await m.release();
    for (const t of tmps.splice(0)) t.cleanup();
    sb.control.clearFaults();
  });
  afterAll(async () => {
    await sb?.close();
  });

  it('an unusable --dest exits 2 before any request, with one line naming the cause: /proc, a file, a dangling link, a read-only mount', async () => {
    const base = scratch();
    const file = join(base, 'a-file');
    writeFileSync(file, 'x');
    const dangling = join(base, 'dangling');
    symlinkSync(join(base, 'nowhere'), dangling);
    const ro = await readOnlyDir(join(base, 'ro'));
    mounts.push(ro);
    const cases: [string, RegExp][] = [
      [`/proc/school-export-test/exports`, /\/proc is on a proc file system/],
      [file, /it is a file, not a directory/],
      [dangling, new RegExp(`it is a symbolic link to ${join(base, 'nowhere')}, which does not exist`)],
      [join(ro.dir, 'exports'), new RegExp(`\\(${ro.expectedCode}\\)`)],
    ];
    sb.control.clearRequests();
    const ended = await Promise.all(cases.map(([dest]) => runChild(sb, ['--dest', dest, '--format', 'ndjson']).done));
    for (const [i, r] of ended.entries()) {
      const [dest, cause] = cases[i]!;
      expect(r.code, `${dest}: ${r.stderr}`).toBe(2);
      const lines = r.stderr.trim().split('\n');
      expect(lines, dest).toHaveLength(1);
      expect(lines[0]).toMatch(new RegExp(`^school-export: --dest ${dest.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: `));
      expect(lines[0]).toMatch(cause);
      expect(r.stdout).toBe('');
    }
    expect(sb.control.requests()).toEqual([]);
    expect(existsSync('/proc/school-export-test')).toBe(false);
  });

  describe('a destination that fills up (a real 1 MiB tmpfs, which needs root)', () => {
    const args = { format: 'ndjson' as const, resources: ['achievements'], schools: ['A1001'], per_page: 100, concurrency: 1 };

    async function disk(): Promise<string> {
      const d = await smallDisk(join(scratch(), 'disk'), 1024 * 1024);
      mounts.push(d);
      return d.dir;
    }

    /** What every run on a full disk must leave: no temp file, no open descriptor, no lease. */
    async function expectClean(dir: string): Promise<void> {
      expect(tempFiles(dir)).toEqual([]);
      expect(await openFilesUnder(dir)).toEqual([]);
      expect(existsSync(join(dir, '_state/_locks/run.json'))).toBe(false);
    }

    describe('mid-task (the disk fills at a known page)', () => {
      let dir: string;
      let s: RunSummary;
      beforeAll(async () => {
        dir = await disk();
        sb.control.clearRequests();
        const off = sb.control.onRequest({ school: 'A1001', resource: 'achievements', page: 3 }, () => fillUp(dir));
        try {
          s = await runExport(sandboxConfig(sb, dir, args), { token: sb.tokens.full });
        } finally {
          off();
        }
      });

      it('the task fails, the run still writes its manifest (partial) and leaves no temp file, descriptor or lease', async () => {
        expect(s.status).toBe('partial');
        expect(s.failures).toEqual([expect.objectContaining({ school_id: 'A1001', resource: 'achievements', status: 'failed' })]);
        const manifest = readRunManifest(dir, s.runId) as { status: string };
        expect(manifest.status).toBe('partial');
        expect(s.notes.join('\n')).not.toMatch(/manifest could not be written/);
        await expectClean(dir);
      });

      it('the failure is an E_SINK naming the file it could not write and the cause (ENOSPC)', () => {
        const f = s.failures[0]!;
        expect(f.message).toMatch(/ENOSPC|no space left/);
        // the task writes achievements and its included people side by side: whichever file of the
        // task the full disk refuses first is the one named
        const files =
          /(\/[^ ]+\/(achievements|achievement_students|achievement_employees)\/region=uk\/school_id=A1001\/[^ ]+\.ndjson) failed/;
        expect(f.message).toMatch(files);
        expect(files.exec(f.message)![1]!.startsWith(join(dir, '/'))).toBe(true);
        expect(f.code).toBe('E_SINK');
      });
    });

    it('at the end: the manifest cannot be written, and the summary says why and where the committed tasks are listed', async () => {
      const dir = await disk();
      // The disk fills the moment the run's one task has committed, before the run writes its manifest.
      const { reporter } = recorder((e) => {
        if (e.event === 'task_done') fillUp(dir);
      });
      const cfg = sandboxConfig(sb, dir, { ...args, resources: ['achievement_attributes'] });
      const s = await runExport(cfg, { token: sb.tokens.full, reporter });
      expect(s.status).toBe('failed');
      expect(s.tasks.committed).toBe(1);
      expect(s.notes.join('\n')).toMatch(
        new RegExp(
          `the run manifest could not be written \\(.*(ENOSPC|no space left).*\\); its committed tasks are listed in _manifests/${s.runId}/`,
        ),
      );
      expect(existsSync(join(dir, '_manifests', `${s.runId}.json`))).toBe(false);
      expect(readManifests(dir).map((t) => [t.resource, t.rows.achievement_attributes])).toEqual([['achievement_attributes', 15]]);
      await expectClean(dir);
    });

    it('between a file and its listing: data files renamed into place whose manifest part cannot be written do not stay behind unlisted', async () => {
      const attrs = { ...args, resources: ['achievement_attributes'] };
      // The data file's size, from the same read on an ordinary disk (the sandbox is seeded).
      const probe = scratch();
      const measured = await runExport(sandboxConfig(sb, probe, attrs), { token: sb.tokens.full });
      const bytes = readManifests(probe).flatMap((t) => t.files.map((f) => f.bytes));
      expect([measured.status, bytes.length]).toEqual(['ok', 1]);
      const pages = Math.ceil(bytes[0]! / 4096);

      // When the read starts, leave room for exactly the data file: it is written and renamed
      // into place; the manifest part that would list it finds the disk full.
      const dir = await disk();
      sb.control.clearRequests();
      const off = sb.control.onRequest({ school: 'A1001', resource: 'achievements/attributes' }, () => {
        fillUp(dir);
        truncateSync(join(dir, 'filler'), statSync(join(dir, 'filler')).size - pages * 4096);
      });
      let s: RunSummary;
      try {
        s = await runExport(sandboxConfig(sb, dir, attrs), { token: sb.tokens.full });
      } finally {
        off();
      }
      expect(s.failures).toEqual([expect.objectContaining({ resource: 'achievement_attributes', status: 'failed' })]);
      expect(s.failures[0]!.message).toMatch(/_manifests\/.*(ENOSPC|no space left)/); // the part, not the data file, failed
      const listed = new Set(readManifests(dir).flatMap((t) => t.files.map((f) => f.path)));
      const data = walk(dir).filter((f) => !f.startsWith('_') && f !== 'filler' && !f.endsWith('.tmp'));
      expect(data.filter((f) => !listed.has(f))).toEqual([]);
      await expectClean(dir);
    });

    it('as a process: exit 1, the summary on stdout, no descriptor closed on garbage collection, no temp file', async () => {
      const dir = await disk();
      sb.control.clearRequests();
      const off = sb.control.onRequest({ school: 'A1001', resource: 'achievements', page: 3 }, () => fillUp(dir));
      try {
        const r = await runChild(sb, [
          '--dest',
          dir,
          '--format',
          'ndjson',
          '--schools',
          'A1001',
          '--resources',
          'achievements',
          '--per-page',
          '100',
          '--concurrency',
          '1',
        ]).done;
        expect(r.code, r.stderr).toBe(1);
        const summary = JSON.parse(r.stdout) as RunSummary;
        // Whether the run manifest still fits depends on whether the failed task's temp file held
        // disk blocks its removal gives back (a small file's bytes are held until it is flushed,
        // and page 3 may be asked for before pages 1-2 reach the disk): either way the summary
        // says so (seen once in about 25 CI runs: 'failed', on a busy machine).
        if (summary.status === 'failed')
          expect(summary.notes.join('\n')).toMatch(/the run manifest could not be written \(.*(ENOSPC|no space left)/);
        else expect(summary.status).toBe('partial');
        expect(summary.failures).toEqual([expect.objectContaining({ school_id: 'A1001', resource: 'achievements', status: 'failed' })]);
        expect(summary.failures[0]!.message).toMatch(/ENOSPC|no space left/);
        expect(r.stderr).not.toMatch(/Closing file descriptor|on garbage collection/);
        expect(tempFiles(dir)).toEqual([]);
        expect(existsSync(join(dir, '_state/_locks/run.json'))).toBe(false);
      } finally {
        off();
      }
    });
  });

  describe('exit status', () => {
    const args = (dest: string, school: string) => [
      '--dest',
      dest,
      '--format',
      'ndjson',
      '--schools',
      school,
      '--resources',
      'school_meta,achievement_attributes',
      '--max-retries',
      '0',
    ];

    it('0 when every task committed, 1 when a task failed (the run names it)', async () => {
      sb.control.fault({ kind: '500', times: 1, path: '/schools/A1002/achievements/attributes' });
      const [ok, failed] = await Promise.all([runChild(sb, args(scratch(), 'A1001')).done, runChild(sb, args(scratch(), 'A1002')).done]);
      expect(ok.code, ok.stderr).toBe(0);
      expect(JSON.parse(ok.stdout)).toMatchObject({ status: 'ok', failures: [] });
      expect(failed.code, failed.stderr).toBe(1);
      expect(JSON.parse(failed.stdout)).toMatchObject({
        status: 'partial',
        failures: [{ school_id: 'A1002', resource: 'achievement_attributes', status: 'failed' }],
      });
    });

    it('an invalid token (401) exits 2 with exactly one line, before any file is written, and the token appears nowhere', async () => {
      const dest = join(scratch(), 'exports');
      const token = 'sbx_wrong_0123456789abcdef';
      const r = await runChild(sb, args(dest, 'A1001'), { SCHOOL_API_TOKEN: token }).done;
      expect(r.code).toBe(2);
      const lines = r.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^school-export: .*401.*the access token was rejected; check SCHOOL_API_TOKEN \/ --token-file$/);
      expect(r.stdout).toBe('');
      expect(r.stderr).not.toContain(token);
      expect(sb.control.requests().every((q) => !q.path.includes(token))).toBe(true);
      expect(walk(dest)).toEqual([]); // no file (the lease came and went)
    });
  });
});
