import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSink } from '../../src/sink/index.ts';
import {
  FULL_SWEEP_EVERY_MS,
  markRunEnded,
  markRunStarted,
  recordWalkOnceCommitted,
  sweepLeftovers,
} from '../../src/pipeline/leftovers.ts';
import { tempDir } from '../integration/helpers.ts';
import { acquireLease } from '../../src/manifest/lease.ts';
import type { Sink } from '../../src/sink/types.ts';

/**
 * What killed runs left behind, swept by the next run: files renamed into place that no manifest
 * part lists, whether the run got as far as a part or not, and nothing of a run whose parts
 * cannot be read or that still holds a lease.
 */
const dirs: { cleanup: () => void }[] = [];
afterEach(() => dirs.splice(0).forEach((d) => d.cleanup()));

function destination() {
  const t = tempDir('leftovers-');
  dirs.push(t);
  const put = (rel: string, text = 'x\n') => {
    mkdirSync(dirname(join(t.dir, rel)), { recursive: true });
    writeFileSync(join(t.dir, rel), text);
  };
  const has = (rel: string) => existsSync(join(t.dir, rel));
  return { dir: t.dir, put, has };
}

const file = (run: string, seq = 1) => `achievements/region=uk/school_id=A1001/${run}-${String(seq).padStart(4, '0')}.ndjson`;
const part = (run: string, paths: string[]) =>
  JSON.stringify({ run_id: run, tasks: [{ school_id: 'A1001', resource: 'achievements', files: paths.map((path) => ({ path })) }] });

describe('sweepLeftovers', () => {
  it('removes what a killed run renamed into place but never listed, keeps what its parts list', async () => {
    const d = destination();
    const run = '20261124T010000.000Z-aaaa';
    d.put(`_manifests/${run}/part-00001.json`, part(run, [file(run, 1)]));
    d.put(file(run, 1));
    d.put(file(run, 2)); // renamed, then killed before its part
    await sweepLeftovers(await openSink(d.dir));
    expect([d.has(file(run, 1)), d.has(file(run, 2)), d.has(`_state/_swept/${run}.json`)]).toEqual([true, false, true]);
  });

  it('removes the files of a run killed before its first part, known by its run marker', async () => {
    const d = destination();
    const run = '20261124T020000.000Z-bbbb';
    const sink = await openSink(d.dir);
    await markRunStarted(sink, run);
    d.put(file(run, 1));
    await sweepLeftovers(sink);
    expect([d.has(file(run, 1)), d.has(`_state/_runs/${run}.json`), d.has(`_state/_swept/${run}.json`)]).toEqual([false, false, true]);
  });

  it('removes nothing of a run whose part cannot be read, and tries again next time', async () => {
    const d = destination();
    const run = '20261124T030000.000Z-cccc';
    d.put(`_manifests/${run}/part-00001.json`, '{"run_id": "cut sh');
    d.put(file(run, 1));
    await sweepLeftovers(await openSink(d.dir));
    expect([d.has(file(run, 1)), d.has(`_state/_swept/${run}.json`)]).toEqual([true, false]);
  });

  it('leaves a finished run alone and drops a marker its end did not remove', async () => {
    const d = destination();
    const run = '20261124T040000.000Z-dddd';
    const sink = await openSink(d.dir);
    await markRunStarted(sink, run);
    d.put(`_manifests/${run}.json`, part(run, []));
    d.put(file(run, 1));
    await sweepLeftovers(sink);
    expect([d.has(file(run, 1)), d.has(`_state/_runs/${run}.json`), d.has(`_state/_swept/${run}.json`)]).toEqual([true, false, false]);
    await markRunEnded(sink, run); // already gone: no error
  });

  describe('a run that starts while the sweep reads (another shard starting at the same moment)', () => {
    const other = '20261124T070000.000Z-gggg';
    const otherTemp = `achievements/region=uk/school_id=A1001/.${other}-0002.ndjson~${other}~0123456789ab.tmp`;

    /**
     * The sink the sweep sees, through which the other run takes its lease, writes its run marker,
     * a data file and a temp file just before the sweep's first call of `at` (what the sweep read
     * before then saw no lease of it).
     */
    function startingDuring(sink: Sink, at: (method: string, prefix: string) => boolean, start: () => Promise<void>): Sink {
      let started = false;
      return new Proxy(sink, {
        get(target, key) {
          const v = Reflect.get(target, key, target) as unknown;
          if (typeof v !== 'function') return v;
          return async (...args: unknown[]) => {
            if (!started && at(String(key), String(args[0]))) {
              started = true;
              await start();
            }
            return (v as (...a: unknown[]) => unknown).apply(target, args);
          };
        },
      });
    }

    for (const [when, at] of [
      ['listing run markers', (m: string, prefix: string) => m === 'list' && prefix === '_state/_runs/'],
      ['listing temp files', (m: string) => m === 'listTemp' || m === 'sweepTemp'],
    ] as const) {
      it(`keeps its marker, its temp file and its data file (starting while ${when})`, async () => {
        const d = destination();
        const sink = await openSink(d.dir);
        const theirs = await openSink(d.dir, { owner: other });
        const leases: { release(): Promise<void> }[] = [];
        const start = async () => {
          leases.push(await acquireLease(theirs, { runId: other, shard: { index: 0, count: 2 }, waitSeconds: 0 }));
          await markRunStarted(theirs, other);
          d.put(file(other, 1));
          d.put(otherTemp);
        };
        try {
          await sweepLeftovers(startingDuring(sink, at, start));
        } finally {
          await Promise.all(leases.map((l) => l.release()));
        }
        expect(leases).toHaveLength(1);
        expect([
          d.has(`_state/_runs/${other}.json`),
          d.has(file(other, 1)),
          d.has(otherTemp),
          d.has(`_state/_swept/${other}.json`),
        ]).toEqual([true, true, true, false]);
      });
    }
  });

  describe('temp files of dead writers', () => {
    const dead = '20261124T050000.000Z-eeee';
    const temp = (dir: string, name: string) => `${dir}.${name}~${dead}~0123456789ab.tmp`;
    const inSchool = temp('achievements/region=uk/school_id=A1001/', `${dead}-0001.ndjson`);
    const outside = [
      temp('', 'write-probe'),
      temp('_state/_locks/', 'run.json'),
      temp('_state/_webhooks/', 'queue.json'),
      temp('_manifests/', 'x.json'),
    ];
    const t0 = Date.parse('2026-11-24T06:00:00Z');
    const DAY = 24 * 3600_000;

    it("a night with no killed run leaves schools' folders unwalked and sweeps the rest; the weekly walk takes what is left", async () => {
      const d = destination();
      const sink = await openSink(d.dir);
      // nothing committed yet: walked whole, nothing written until the run commits
      const first = await sweepLeftovers(sink, new Date(t0));
      expect(d.has('_state/_full-sweep.json')).toBe(false);
      await recordWalkOnceCommitted(sink, first); // the run committed nothing (refused): still nothing
      expect(d.has('_state/_full-sweep.json')).toBe(false);
      const done = '20261124T000000.000Z-ffff';
      d.put(`_manifests/${done}.json`, part(done, []));
      await recordWalkOnceCommitted(sink, first); // the first run committed: its walk is recorded
      expect(d.has('_state/_full-sweep.json')).toBe(true);
      expect(await sweepLeftovers(sink, new Date(t0))).toEqual({});
      for (const p of [inSchool, ...outside]) d.put(p);
      await sweepLeftovers(sink, new Date(t0 + DAY));
      expect([inSchool, ...outside].map(d.has)).toEqual([true, false, false, false, false]);
      await sweepLeftovers(sink, new Date(t0 + FULL_SWEEP_EVERY_MS - DAY));
      expect(d.has(inSchool)).toBe(true);
      await sweepLeftovers(sink, new Date(t0 + FULL_SWEEP_EVERY_MS + DAY));
      expect(d.has(inSchool)).toBe(false);
    });

    it('a killed run, or a destination never walked (an earlier version wrote it), makes the night walk it whole', async () => {
      const d = destination();
      const sink = await openSink(d.dir);
      d.put(inSchool);
      await sweepLeftovers(sink, new Date(t0)); // no record of a walk yet
      expect(d.has(inSchool)).toBe(false);
      d.put(inSchool);
      await markRunStarted(sink, dead); // then killed: its marker stays
      await sweepLeftovers(sink, new Date(t0 + DAY));
      expect([d.has(inSchool), d.has(`_state/_swept/${dead}.json`)]).toEqual([false, true]);
    });
  });
});
