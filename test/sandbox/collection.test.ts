import { describe, expect, it } from 'vitest';
import { LazyCollection, type Window } from '../../src/sandbox/collection.ts';

/** Brute-force model: every live key with its updated time, checked against the lazy views. */
function model(c: LazyCollection, win: Window, pred?: (i: number) => boolean): number[] {
  const out: number[] = [];
  for (let i = 0; i < c.nextIndex; i++) {
    if (!c.exists(i)) continue;
    const u = c.updatedOf(i);
    if (win.after !== undefined && !(u > win.after)) continue;
    if (win.before !== undefined && !(u < win.before)) continue;
    if (pred && !pred(i)) continue;
    out.push(i);
  }
  return out;
}

describe('LazyCollection', () => {
  it('lists, windows and seeks exactly like a materialised list, through random mutations', () => {
    const c = new LazyCollection(500, (i) => 1000 + i * 10 + (i % 7));
    let now = 100_000;
    let x = 12345;
    const rand = (n: number) => (x = (x * 1103515245 + 12345) & 0x7fffffff) % n;
    const windows: Window[] = [{}, { after: 2000 }, { before: 3000 }, { after: 1500, before: 4200 }, { after: 100_050 }];
    for (let round = 0; round < 40; round++) {
      const op = rand(4);
      const i = rand(c.nextIndex);
      if (op === 0 && c.exists(i)) c.touch(i, { updated: ++now, patch: { n: round } });
      if (op === 1 && c.exists(i)) c.touch(i, { updated: ++now, deleted: true });
      if (op === 2 && c.isDeleted(i)) c.touch(i, { updated: ++now, deleted: false });
      if (op === 3) c.add(++now);
      for (const win of windows) {
        const expected = model(c, win);
        const v = c.view(win);
        expect([...v.keysAfter(-1)]).toEqual(expected);
        for (const offset of [0, 1, 7, 50, expected.length - 1, expected.length, expected.length + 3]) {
          if (offset < 0) continue;
          const got = [...v.keysAfter(v.seek(offset))].slice(0, 5);
          expect(got, `offset ${offset}`).toEqual(expected.slice(offset, offset + 5));
        }
        const odd = (k: number) => k % 2 === 1;
        const withPred = c.view(win, odd);
        expect([...withPred.keysAfter(withPred.seek(3))]).toEqual(model(c, win, odd).slice(3));
      }
    }
  });

  it('finds the window by binary search on a million rows without visiting them', () => {
    let visited = 0;
    const c = new LazyCollection(1_000_000, (i) => {
      visited++;
      return i * 20;
    });
    const v = c.view({ after: 19_999_900 }); // rows 999_996.. 999_999
    expect([...v.keysAfter(v.seek(2))]).toEqual([999_998, 999_999]);
    expect(visited).toBeLessThan(100);
  });
});
