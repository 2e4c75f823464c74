import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { runExport } from '../../src/pipeline/run.ts';
import type { Sink } from '../../src/sink/types.ts';
import { readManifests } from '../helpers/read-exports.ts';
import { sandboxConfig, tempDir } from './helpers.ts';

/**
 * A task whose last piece is queued for the committer gives its --concurrency slot to the next
 * task: the manifest part and state write still to come make no request. Shown at a known point:
 * the run's first manifest part is held until the second school's task has asked for its page.
 * Were the first task still holding the only slot, that page could not be asked before its commit
 * was acknowledged, and the run would never end (the test's timeout).
 */
describe('slots and commits', () => {
  let sb: Sandbox;
  const tmp = tempDir('commit-slots-');

  beforeAll(async () => {
    sb = await startSandbox({ seed: 5, schools: 2, achievementsPerSchool: 5 });
  });
  afterAll(async () => {
    await sb?.close();
    tmp.cleanup();
  });

  it('the next task starts while the previous one waits for its commit (--concurrency 1)', async () => {
    let asked!: () => void;
    const secondAsked = new Promise<void>((r) => (asked = r));
    const off = sb.control.onRequest({ school: 'A1002', resource: 'achievements' }, () => asked());
    const parts: string[] = [];
    let held = false;
    const wrapSink = (sink: Sink): Sink =>
      new Proxy(sink, {
        get(target, key) {
          if (key === 'writeAtomic') {
            return async (path: string, ...rest: unknown[]) => {
              if (/^_manifests\/[^/]+\/part-/.test(path)) {
                parts.push(path);
                if (!held) {
                  held = true;
                  await secondAsked;
                }
              }
              return (target.writeAtomic as (...a: unknown[]) => Promise<unknown>).call(target, path, ...rest);
            };
          }
          const value: unknown = Reflect.get(target, key, target);
          return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        },
      });
    try {
      const summary = await runExport(sandboxConfig(sb, tmp.dir, { format: 'ndjson', concurrency: 1, resources: ['achievements'] }), {
        token: sb.tokens.full,
        wrapSink,
      });
      expect(summary.failures).toEqual([]);
      expect(summary.status).toBe('ok');
    } finally {
      off();
    }
    expect(held).toBe(true);
    expect(parts.length).toBeGreaterThan(0);
    // both schools' tasks committed, each listed once
    const tasks = readManifests(tmp.dir).filter((t) => t.resource === 'achievements');
    expect(tasks.map((t) => [t.school_id, t.status]).sort()).toEqual([
      ['A1001', 'committed'],
      ['A1002', 'committed'],
    ]);
  }, 20_000);
});
