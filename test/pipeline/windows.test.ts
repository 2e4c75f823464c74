import { describe, expect, it } from 'vitest';
import { boundNewest, planWindows, readsInWindows, splitByTime } from '../../src/pipeline/windows.ts';
import { resourceByName } from '../../src/resources/index.ts';

const DAY = 86_400_000;
const t0 = Date.parse('2024-01-01T00:00:00Z');

/** A school whose rows carry these stamps, answering probes as the service would. */
function school(stamps: number[]) {
  const asked: number[] = [];
  const anyAfter = (ms: number) => {
    asked.push(ms);
    return Promise.resolve(stamps.some((s) => s > ms));
  };
  return { anyAfter, asked };
}

describe('boundNewest', () => {
  // Rows early in 2024, a clock almost three years later (the sandbox's timeline): spans of rows
  // from hours to weeks, found with windows that all hold rows, in three rounds at most.
  it.each([
    { span: 23 * DAY, probes: 8 },
    { span: 16 * 3_600_000, probes: 4 },
    { span: 16 * 3_600_000, probes: 8 },
    { span: 300 * DAY, probes: 8 },
  ])('finds where rows stop long before the server clock ($span ms of rows, $probes probes a round)', async (c) => {
    const stamps = Array.from({ length: 1000 }, (_, i) => t0 + (i * c.span) / 1000);
    const s = school(stamps);
    const until = Date.parse('2026-11-24T00:00:00Z');
    const { newest, probes } = await boundNewest({ oldest: t0, known: stamps[99]!, until, probes: c.probes }, s.anyAfter);
    expect(newest).toBeGreaterThanOrEqual(stamps.at(-1)!);
    // within about a quarter of the rows' span above the newest row, not at the clock
    expect(newest - stamps.at(-1)!).toBeLessThanOrEqual(c.span / 3);
    expect(probes).toBe(s.asked.length);
    expect(probes).toBeLessThanOrEqual(3 * c.probes);
    // windows over the bound split the rows evenly enough: three in four hold some
    const { boundaries } = splitByTime(new Date(t0), new Date(newest), c.probes);
    const edges = [-Infinity, ...boundaries, Infinity];
    const counts = edges.slice(1).map((hi, i) => stamps.filter((x) => x >= edges[i]! && x < hi).length);
    expect(counts.filter((n) => n > 0).length).toBeGreaterThanOrEqual((3 * c.probes) / 4);
  });

  it('asks one round when rows reach into the last step (a school changed today)', async () => {
    const until = t0 + 100 * DAY;
    const s = school([t0, t0 + 50 * DAY, until - 1000]);
    const { newest, probes } = await boundNewest({ oldest: t0, known: t0, until, probes: 8 }, s.anyAfter);
    expect(probes).toBe(8);
    expect(newest).toBe(until);
  });

  it('asks nothing when the sample already reaches the clock', async () => {
    const s = school([t0]);
    const { newest, probes } = await boundNewest({ oldest: t0 - DAY, known: t0, until: t0 + 1000, probes: 8 }, s.anyAfter);
    expect(probes).toBe(0);
    expect(newest).toBe(t0 + 1000);
  });

  it('never bounds below a row it was told exists', async () => {
    const s = school([]); // every probe says no rows after it
    const known = t0 + 10 * DAY;
    const { newest } = await boundNewest({ oldest: t0, known, until: t0 + 1000 * DAY, probes: 4 }, s.anyAfter);
    expect(newest).toBeGreaterThanOrEqual(known);
    expect(newest - known).toBeLessThanOrEqual(250 * DAY);
  });
});

describe('planWindows', () => {
  it('plans from a first page of 150,000 rows (past the argument limit of a spread)', async () => {
    const stamp = (ms: number) => ({
      date: new Date(ms).toISOString().replace('T', ' ').replace('Z', '000'),
      timezone_type: 3,
      timezone: 'UTC',
    });
    const sample = Array.from({ length: 150_000 }, (_, i) => ({ id: `A${i}`, updated_at: stamp(t0 + i * 1000) }));
    const newest = t0 + 149_999 * 1000;
    const s = school([newest]);
    const { windows, boundaries } = await planWindows(sample, { field: 'updated_at', until: new Date(t0 + 400 * DAY), k: 4 }, s.anyAfter);
    expect(windows).toHaveLength(4);
    expect(boundaries[0]).toBeGreaterThan(t0);
    expect(boundaries.at(-1)).toBeLessThan(newest);
  });
});

describe('readsInWindows', () => {
  it('splits full reads of lists the service filters by updated_at, never an endpoint without the filter', () => {
    const task = (name: string, mode = 'full') => ({ windows: 4, mode, spec: resourceByName(name)! });
    expect(readsInWindows(task('achievements'))).toBe(true);
    expect(readsInWindows(task('achievements', 'incremental'))).toBe(false);
    expect(readsInWindows({ ...task('achievements'), windows: 1 })).toBe(false);
    // no updated_after on this endpoint: each window would read the whole list again
    expect(readsInWindows(task('achievement_attributes'))).toBe(false);
    expect(readsInWindows(task('deletions'))).toBe(false);
  });
});
