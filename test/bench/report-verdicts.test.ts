import { describe, expect, it } from 'vitest';
import { SCALES } from '../../bench/bench.ts';
import { lines, type Results } from '../../bench/report.ts';

/** A record holding only section 6's figures: the default 31% slower than --workers 0 in both runs. */
function incrementalOn(nproc: number): Results {
  return {
    when: '2026-11-29',
    commit: 'test',
    code: 'dist',
    mode: 'tiny',
    machine: { nproc, memGiB: 24, cpu: 'test', node: process.version },
    scale: SCALES.tiny,
    incremental: {
      standard: {
        changed: 20,
        total: 2_000,
        full: { ms: 1_310, requests: 40 },
        incremental: { ms: 131, requests: 4, rows: 20 },
        workers0: { full: { ms: 1_000 }, incremental: { ms: 100 } },
      },
    },
  };
}

const sideBySide = (r: Results) => lines(r).filter((l) => l.measure.includes('default / --workers 0'));

describe('bench report: default against --workers 0', () => {
  it('shows two runs of one configuration as noise, not a failure (NDJSON starts no worker thread on 2 CPUs)', () => {
    const rows = sideBySide(incrementalOn(2));
    expect(rows).toHaveLength(2);
    for (const l of rows) {
      expect(l.value).toMatch(/^1\.31 \(.*\); the same configuration on 2 CPUs \(no worker thread for NDJSON\): the difference is noise$/);
      expect(l.verdict).toBe('pass');
    }
  });

  it('judges the ratio where the default starts worker threads (NDJSON on 4 CPUs)', () => {
    const rows = sideBySide(incrementalOn(4));
    expect(rows.map((l) => [l.value, l.verdict])).toEqual([
      ['1.31 (1,310 / 1,000 ms)', 'FAIL'],
      ['1.31 (131 / 100 ms)', 'FAIL'],
    ]);
  });
});
