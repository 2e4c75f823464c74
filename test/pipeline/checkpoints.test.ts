import { describe, expect, it } from 'vitest';
import { CheckpointPolicy } from '../../src/pipeline/checkpoints.ts';

/** A clock the test moves by hand. */
function manualClock(start = 1000): { now: () => number; advance: (ms: number) => void } {
  let t = start;
  return { now: () => t, advance: (ms) => (t += ms) };
}

describe('CheckpointPolicy', () => {
  it('is due every N pages counted from the last reset', () => {
    const clock = manualClock();
    const timer = new CheckpointPolicy(3, 0, clock.now).start();
    expect([1, 2, 3].map((p) => timer.due(p))).toEqual([false, false, true]);
    timer.reset(3);
    expect([4, 5, 6, 7].map((p) => timer.due(p))).toEqual([false, false, true, true]);
  });

  it('counts from the page a resumed read starts at', () => {
    const timer = new CheckpointPolicy(4, 0, manualClock().now).start(8);
    expect(timer.due(11)).toBe(false);
    expect(timer.due(12)).toBe(true);
  });

  it('is due when the interval has passed on the injected clock, whatever the pages', () => {
    const clock = manualClock();
    const timer = new CheckpointPolicy(0, 60_000, clock.now).start();
    clock.advance(59_999);
    expect(timer.due(1)).toBe(false);
    clock.advance(1);
    expect(timer.due(1)).toBe(true);
    timer.reset(1);
    expect(timer.due(2)).toBe(false); // the interval restarts at the reset
    clock.advance(60_000);
    expect(timer.due(2)).toBe(true);
  });

  it('pages or time, whichever comes first', () => {
    const clock = manualClock();
    const policy = new CheckpointPolicy(50, 1000, clock.now);
    const byTime = policy.start();
    clock.advance(1000);
    expect(byTime.due(2)).toBe(true);
    const byPages = policy.start();
    expect(byPages.due(50)).toBe(true);
    expect(byPages.due(49)).toBe(false);
  });

  it('never: 0 pages and 0 ms is never due', () => {
    const clock = manualClock();
    const timer = new CheckpointPolicy(0, 0, clock.now).start();
    clock.advance(10 ** 9);
    expect(timer.due(10 ** 6)).toBe(false);
    expect(CheckpointPolicy.never.start().due(10 ** 6)).toBe(false);
  });

  it('timers of one policy are independent', () => {
    const clock = manualClock();
    const policy = new CheckpointPolicy(2, 0, clock.now);
    const a = policy.start();
    const b = policy.start();
    a.reset(2);
    expect(a.due(3)).toBe(false);
    expect(b.due(3)).toBe(true);
  });
});
