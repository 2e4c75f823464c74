/**
 * The benchmark harness at its tiniest scale, so it cannot rot: every section runs, every child
 * process starts and answers, and the figures are consistent with the data served. No timing
 * is asserted (performance belongs to `npm run bench`).
 */
import { describe, expect, it } from 'vitest';
import { runBench, SCALES } from '../../bench/bench.ts';

describe('npm run bench --tiny', () => {
  it('measures every section on tiny data and prints one table', async () => {
    const { results, table } = await runBench({ mode: 'tiny' });
    const s = SCALES.tiny;
    const t = results.throughput!;
    const rows = s.throughput.schools * s.throughput.rows;
    // the ceiling parsed exactly what the exports received: the discovery page, the revoked and
    // declined lists (reconciliation), each school's permissions (read before a full read of
    // achievements) and each school's pages
    expect(t.ceiling.pages).toBe(1 + 2 + s.throughput.schools * (1 + Math.ceil(s.throughput.rows / 1000)));
    expect(t.ceiling.rows).toBeGreaterThan(rows + s.throughput.schools);
    expect(t.ceiling.gzipBytes).toBeGreaterThan(0);
    expect(t.ceiling.rawBytes).toBeGreaterThan(t.ceiling.gzipBytes);
    for (const e of Object.values(t.e2e)) {
      expect(e.status).toBe('ok');
      expect(e.rows.achievements).toBe(rows);
      expect(e.pages).toBe(s.throughput.schools * Math.ceil(s.throughput.rows / 1000));
      expect(e.maxRssMB).toBeGreaterThan(0);
    }
    expect(t.duckdb.rows).toBe(rows);
    expect(t.stages.rows).toBe(rows);
    for (const sh of Object.values(t.sharded)) expect(sh.rows).toBe(rows);
    for (const ms of [t.stages.parseMs, t.stages.flattenMs, ...Object.values(t.stages.formatMs)]) expect(ms).toBeGreaterThan(0);

    for (const n of s.memory)
      for (const f of ['ndjson', 'csv', 'parquet'] as const) expect(results.memory![n]![f].rows.achievements).toBe(n);

    expect(results.latency!.map((l) => l.concurrency)).toEqual(s.latency.concurrency);
    for (const l of results.latency!) {
      expect(l.minRequests).toBe(1 + s.latency.schools * Math.ceil(s.latency.rows / s.latency.maxPerPage));
      // One permissions probe per school precedes a full read of achievements (scope and 423
      // checks), and two list requests reconcile revocations.
      expect(l.requests).toBeLessThanOrEqual(l.minRequests + s.latency.schools + 2);
      expect(l.ms).toBeGreaterThan(l.minMs / 2);
    }

    const inc = results.incremental!;
    expect(inc.changed).toBe(inc.total / 100);
    expect(inc.incremental.rows).toBeGreaterThanOrEqual(inc.changed);
    expect(inc.incremental.requests).toBeLessThan(inc.full.requests);

    for (const section of [
      '1 ceiling',
      '2 end to end',
      '2b stages',
      '3 native anchor',
      '4 memory',
      '5 latency-bound',
      '6 incremental',
      '7 decode paths',
    ]) {
      expect(table).toContain(section);
    }
  }, 180_000);
});
