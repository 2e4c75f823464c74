import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { RunQueue, runCommand } from '../../src/webhooks/run-queue.ts';

describe('run queue', () => {
  it('runs the installed command for the school', () => {
    const c = runCommand('pipelines/prod.json', 'A12');
    expect(c.cmd).toBe(process.execPath);
    expect(c.args.slice(1)).toEqual(['run', 'pipelines/prod.json', '--schools', 'A12']);
    expect(c.args[0]).toMatch(/bin\/school-export\.js$/);
    expect(existsSync(c.args[0]!)).toBe(true);
    expect(() => runCommand('p.json', 'A1;rm')).toThrow(/refusing/);
  });

  it('one run per school at a time; approvals meanwhile queue exactly one more', async () => {
    const log: any[] = [];
    const q = new RunQueue(
      (id) => ({ cmd: process.execPath, args: ['-e', `process.exit(${id === 'A2' ? 3 : 0})`] }),
      (e) => log.push(e),
    );
    q.request('A1');
    q.request('A1'); // the first is certainly still running: no event can run between these calls
    q.request('A1');
    q.request('A2');
    await q.idle('A1');
    await q.idle('A2');
    const a1 = log.filter((e) => e.school_id === 'A1').map((e) => e.event);
    expect(a1).toEqual(['run_started', 'run_queued', 'run_queued', 'run_exit', 'run_started', 'run_exit']);
    expect(log.find((e) => e.school_id === 'A2' && e.event === 'run_exit')).toMatchObject({ code: 3 });
    await q.close();
  });

  it('a command that cannot start is logged, not thrown', async () => {
    const log: any[] = [];
    const q = new RunQueue(
      () => ({ cmd: '/nonexistent/school-export', args: [] }),
      (e) => log.push(e),
    );
    q.request('A9');
    await q.idle('A9');
    expect(log.at(-1)).toMatchObject({ event: 'run_exit', school_id: 'A9', code: null, error: expect.stringMatching(/ENOENT/) });
  });
});
