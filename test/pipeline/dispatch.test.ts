import { describe, expect, it } from 'vitest';
import { runEach } from '../../src/pipeline/dispatch.ts';

/** A promise resolved from outside. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** Lets every queued promise callback run. */
const settle = () => new Promise<void>((r) => setImmediate(r));

describe('runEach', () => {
  it('runs at most `concurrency` items at once, each item once, and ends when the last ends', async () => {
    const ends = [deferred(), deferred(), deferred()];
    const started: number[] = [];
    const run = runEach([0, 1, 2], 2, async (i) => {
      started.push(i);
      await ends[i]!.promise;
    });
    await settle();
    expect(started).toEqual([0, 1]);
    ends[1]!.resolve();
    await settle();
    expect(started).toEqual([0, 1, 2]);
    let done = false;
    void run.then(() => (done = true));
    ends[2]!.resolve();
    await settle();
    expect(done).toBe(false); // item 0 still runs
    ends[0]!.resolve();
    await run;
  });

  it('starts the next item once one frees its slot, and ends only when the freed one has ended too', async () => {
    const ends = [deferred(), deferred()];
    const started: number[] = [];
    const frees: (() => void)[] = [];
    let done = false;
    const run = runEach(
      [0, 1],
      1,
      async (i, freeSlot) => {
        started.push(i);
        frees[i] = freeSlot;
        await ends[i]!.promise;
      },
      2,
    ).then(() => (done = true));
    await settle();
    expect(started).toEqual([0]);
    frees[0]!(); // item 0 waits for something that makes no request: the slot goes to item 1
    await settle();
    expect(started).toEqual([0, 1]);
    ends[1]!.resolve();
    await settle();
    expect(done).toBe(false);
    ends[0]!.resolve();
    await run;
    expect(done).toBe(true);
  });

  it('holds at most `backlog` begun items, freed slots or not', async () => {
    const ends = [deferred(), deferred(), deferred()];
    const started: number[] = [];
    const run = runEach(
      [0, 1, 2],
      1,
      async (i, freeSlot) => {
        started.push(i);
        freeSlot();
        await ends[i]!.promise;
      },
      2,
    );
    await settle();
    expect(started).toEqual([0, 1]); // item 2 waits: two items begun and not ended
    ends[0]!.resolve();
    await settle();
    expect(started).toEqual([0, 1, 2]);
    ends[1]!.resolve();
    ends[2]!.resolve();
    await run;
  });

  it('lets go of each item as it is taken', async () => {
    const items: ({ n: number } | undefined)[] = [{ n: 1 }, { n: 2 }];
    const seen: (number | undefined)[][] = [];
    await runEach(items, 1, async (x) => {
      seen.push([x.n, items[0]?.n, items[1]?.n]);
    });
    expect(seen).toEqual([
      [1, undefined, 2],
      [2, undefined, undefined],
    ]);
    expect(items).toEqual([]);
  });
});
