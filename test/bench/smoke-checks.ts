/** What the bench smoke tests check of each section's figures (no timing: figures consistent with the data served). */
import { expect } from 'vitest';
import { SCALES } from '../../bench/bench.ts';
import type { Results } from '../../bench/report.ts';
import type { Shape } from '../../bench/sections.ts';

const s = SCALES.tiny;

/** Throughput (ceiling, end to end, stages, page work). */
export function expectDataPathFigures(results: Results, shape: Shape): void {
  const t = results.throughput![shape]!;
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
  expect(t.raw.median.cpuMs).toBeGreaterThan(0);
  expect(t.e2e.ndjson.cpuMs).toHaveLength(s.throughput.repeat);
  expect(t.pool.rows).toBe(rows);
  for (const ms of [t.stages.parseMs, t.stages.flattenMs, ...Object.values(t.stages.formatMs), ...Object.values(t.stages.encodedMs ?? {})])
    expect(ms).toBeGreaterThan(0);
  for (const f of ['ndjson', 'csv', 'parquet'] as const) expect(Object.keys(t.pool.ms[f])).toEqual(['0', '1', '2']);
}

/** Memory: one school of each size, every format. */
export function expectMemoryFigures(results: Results, shape: Shape): void {
  for (const n of s.memory)
    for (const f of ['ndjson', 'csv', 'parquet'] as const) expect(results.memory![shape]![n]![f].rows.achievements).toBe(n);
}

/** Latency, the big school, incremental and the live server. */
export function expectRunFigures(results: Results, shape: Shape): void {
  const lat = results.latency![shape]!;
  expect(lat.map((l) => l.concurrency)).toEqual([...s.latency.concurrency, Math.max(...s.latency.concurrency), s.latency.concurrency[0]]);
  expect(lat.map((l) => l.connections)).toEqual([...s.latency.concurrency.map(() => undefined), 8, undefined]);
  expect(lat.map((l) => l.workers0 === true)).toEqual([...s.latency.concurrency.map(() => false), false, true]);
  for (const l of lat) {
    // discovery, and per school a permissions probe (scope and
    // 423 checks before a full read of achievements) and its pages
    expect(l.minRequests).toBe(1 + s.latency.schools * (1 + Math.ceil(s.latency.rows / s.latency.maxPerPage)));
    expect(l.requests).toBe(l.minRequests);
    expect(l.ms).toBeGreaterThan(l.minMs / 2);
  }

  const b = results.bigSchool![shape]!;
  const pages = Math.ceil(s.bigSchool.rows / s.bigSchool.maxPerPage);
  expect(b.pages).toBe(pages);
  expect([b.plain.windows, b.windowed.windows]).toEqual([1, s.bigSchool.windows]);
  // discovery, the permissions probe; windows add the sampling page
  expect(b.plain.minRequests).toBe(2 + pages);
  expect(b.windowed.minRequests).toBe(2 + 1 + pages);
  expect(b.plain.requests).toBe(b.plain.minRequests);
  expect(b.plain.windowPages).toEqual({});
  expect(b.plain.probes).toBe(0);
  for (const r of [b.plain, b.windowed, b.windowedW0]) {
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

  const inc = results.incremental![shape]!;
  expect(inc.changed).toBe(inc.total / 100);
  expect(inc.incremental.rows).toBeGreaterThanOrEqual(inc.changed);
  expect(inc.incremental.requests).toBeLessThan(inc.full.requests);
  expect(inc.workers0.incremental.ms).toBeGreaterThan(0);

  const live = results.live![shape]!;
  for (const k of ['ndjson', 'ndjson_w0', 'parquet', 'parquet_w0'] as const) {
    expect(live.runs[k].median.status).toBe('ok');
    expect(live.runs[k].median.rows.achievements).toBe(s.live.schools * s.live.rows);
  }
}

export function expectStartupFigures(results: Results, shape: Shape): void {
  const up = results.startup![shape]!;
  expect(up.ms).toHaveLength(s.startup.repeat);
  expect(up.median.ms).toBeGreaterThan(0);
  expect(up.nodeMs).toBeGreaterThan(0);
  expect(up.checkout.runs).toHaveLength(s.startup.repeat);
  expect(up.checkout.ms).toBeGreaterThan(0);
  // CPU comes from /proc (Linux): where the installed runs have it, the checkout's have it too
  if (up.median.cpuMs !== undefined) expect(up.checkout.cpuMs).toBeGreaterThan(0);
}
