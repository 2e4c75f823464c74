/**
 * The benchmark harness at its tiniest scale, so it cannot rot: every section runs, every child
 * process starts and answers, and the figures are consistent with the data served. No timing
 * is asserted (performance belongs to `npm run bench`).
 */
import { describe, expect, it } from 'vitest';
import { runBench, SCALES } from '../../bench/bench.ts';
import { expectScaleFigures } from './scale-checks.ts';

describe('npm run bench --tiny', () => {
  it('measures every section on tiny data and prints one table', async () => {
    const { results, table } = await runBench({ mode: 'tiny' });
    const s = SCALES.tiny;
    const t = results.throughput!;
    const rows = s.throughput.schools * s.throughput.rows;
    // the ceiling parsed exactly what the exports received: the discovery page, each school's
    // permissions (read before a full read of achievements) and each school's pages (no revoked
    // or declined list: nothing held in the destination is gone from discovery)
    expect(t.ceiling.pages).toBe(1 + s.throughput.schools * (1 + Math.ceil(s.throughput.rows / 1000)));
    expect(t.ceiling.rows).toBeGreaterThan(rows + s.throughput.schools);
    expect(t.ceiling.gzipBytes).toBeGreaterThan(0);
    expect(t.ceiling.rawBytes).toBeGreaterThan(t.ceiling.gzipBytes);
    expect(Object.keys(t.e2e).sort()).toEqual(['csv', 'csv_w0', 'ndjson', 'ndjson_w0', 'parquet', 'parquet_w0']);
    for (const e of [...Object.values(t.e2e).map((r) => r.median), t.parquet_s3]) {
      expect(e.status).toBe('ok');
      expect(e.rows.achievements).toBe(rows);
      expect(e.pages).toBe(s.throughput.schools * Math.ceil(s.throughput.rows / 1000));
      expect(e.maxRssMB).toBeGreaterThan(0);
    }
    expect(t.duckdb.rows).toBe(rows);
    expect(t.stages.rows).toBe(rows);
    // the hand-written script read the same rows (its discovery rows are not counted)
    expect(t.raw.median.rows).toBe(rows);
    expect(t.pool.rows).toBe(rows);
    for (const ms of [
      t.stages.parseMs,
      t.stages.flattenMs,
      ...Object.values(t.stages.formatMs),
      ...Object.values(t.stages.encodedMs ?? {}),
    ])
      expect(ms).toBeGreaterThan(0);
    for (const f of ['ndjson', 'csv', 'parquet'] as const) expect(Object.keys(t.pool.ms[f])).toEqual(['0', '1', '2']);

    for (const n of s.memory)
      for (const f of ['ndjson', 'csv', 'parquet'] as const) expect(results.memory![n]![f].rows.achievements).toBe(n);

    expect(results.latency!.map((l) => l.concurrency)).toEqual([...s.latency.concurrency, Math.max(...s.latency.concurrency)]);
    expect(results.latency!.map((l) => l.connections)).toEqual([...s.latency.concurrency.map(() => undefined), 8]);
    for (const l of results.latency!) {
      // discovery, and per school a permissions probe (scope and
      // 423 checks before a full read of achievements) and its pages
      expect(l.minRequests).toBe(1 + s.latency.schools * (1 + Math.ceil(s.latency.rows / s.latency.maxPerPage)));
      expect(l.requests).toBe(l.minRequests);
      expect(l.ms).toBeGreaterThan(l.minMs / 2);
    }

    const b = results.bigSchool!;
    const pages = Math.ceil(s.bigSchool.rows / s.bigSchool.maxPerPage);
    expect(b.pages).toBe(pages);
    expect([b.plain.windows, b.windowed.windows]).toEqual([1, s.bigSchool.windows]);
    // discovery, the permissions probe; windows add the sampling page
    expect(b.plain.minRequests).toBe(2 + pages);
    expect(b.windowed.minRequests).toBe(2 + 1 + pages);
    expect(b.plain.requests).toBe(b.plain.minRequests);
    expect(b.plain.windowPages).toEqual({});
    expect(b.plain.probes).toBe(0);
    for (const r of [b.plain, b.windowed]) {
      // every row once: the windows' boundary duplicates dropped, none lost
      expect(r.rows).toBe(s.bigSchool.rows);
      expect(r.distinctIds).toBe(s.bigSchool.rows);
      expect(r.cpuMs).toBeGreaterThan(0);
      expect(r.runs).toHaveLength(s.bigSchool.repeat);
    }
    // one walk per window (each asks at least its first page), the front saw every page of them,
    // and the probes that found where the rows stop (at most three rounds)
    const w = b.windowed;
    expect(Object.keys(w.windowPages)).toHaveLength(s.bigSchool.windows);
    const windowed = Object.values(w.windowPages).reduce((a, n) => a + n, 0);
    expect(w.probes).toBeGreaterThan(0);
    expect(w.probes).toBeLessThanOrEqual(3 * s.bigSchool.windows);
    expect(w.requests).toBe(b.plain.requests + 1 + w.probes + windowed - pages);
    expect(windowed).toBeGreaterThanOrEqual(pages);
    // the sandbox's rows stop years before its clock; the windows split the rows all the same
    expect(Math.max(...Object.values(w.windowPages))).toBeLessThan(pages / 2);

    const inc = results.incremental!;
    expect(inc.changed).toBe(inc.total / 100);
    expect(inc.incremental.rows).toBeGreaterThanOrEqual(inc.changed);
    expect(inc.incremental.requests).toBeLessThan(inc.full.requests);

    expectScaleFigures(results, table);

    for (const section of [
      '1 ceiling',
      '2 end to end',
      '2a hand-written',
      '2b stages',
      '2c page work',
      '3 native anchor',
      '4 memory',
      '5 latency-bound',
      '5b big school',
      '6 incremental',
      '7 decode paths',
    ]) {
      expect(table).toContain(section);
    }
  }, 240_000);
});
