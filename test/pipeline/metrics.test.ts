import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Manifest, ManifestTask } from '../../src/manifest/types.ts';
import { previousLastSuccess, renderMetrics, writeMetricsFile } from '../../src/pipeline/metrics.ts';
import { summarise, type RunSummary } from '../../src/pipeline/summary.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { runChild } from '../integration/child-run.ts';

/** An independent reader of the exposition format (ported from the Prometheus Python client's parser). */
type Parsed = { name: string; help: string; type: string; metrics: { value: string; labels?: Record<string, string> }[] }[];
const parsePrometheus = createRequire(import.meta.url)('parse-prometheus-text-format') as (text: string) => Parsed;

/** name -> [labels, value] */
function samples(text: string): Map<string, { labels: Record<string, string>; value: number }[]> {
  return new Map(parsePrometheus(text).map((f) => [f.name, f.metrics.map((m) => ({ labels: m.labels ?? {}, value: Number(m.value) }))]));
}

const task = (school: string, resource: string, o: Partial<ManifestTask> = {}): ManifestTask => ({
  school_id: school,
  region: 'uk',
  resource,
  status: 'committed',
  mode: 'incremental',
  files: [{ table: resource, path: `${resource}/x-${school}.ndjson`, rows: 10, bytes: 100, sha256: 'x' }],
  rows: { [resource]: 10 },
  watermark: '2026-03-01T01:59:00.000Z',
  ...o,
});

function summary(tasks: ManifestTask[], status: Manifest['status'], previous = new Map<string, string | null>()): RunSummary {
  const m: Manifest = {
    version: 1,
    run_id: '20260301T010000.000Z-abcd',
    started_at: '2026-03-01T01:00:00.000Z',
    finished_at: '2026-03-01T02:00:00.000Z',
    format: 'ndjson',
    status,
    tasks,
    deletions: [],
  };
  return summarise(m, {
    deactivated: [],
    scopeMasked: {},
    durationMs: 3_600_000,
    dest: 's3://bucket/exports "nightly"',
    requests: 99,
    notes: [],
    failRun: false,
    tally: { recordsRead: 1234, previous },
  });
}

const ctx = { dest: 'ignored', shard: { index: 1, count: 4 }, finishedAt: new Date('2026-03-01T02:00:00.000Z') };

describe('--metrics-file: the Prometheus text format', () => {
  it('rows, files and bytes per table, duration, failures by code, maximum lag and last success, parsed back by an independent parser', () => {
    const failed = (school: string, code: string) =>
      task(school, 'achievements', { status: 'failed', files: [], rows: {}, watermark: undefined, error: { code, message: 'x' } });
    const s = summary(
      [
        task('A1001', 'achievements'),
        task('A1001', 'school_meta', { watermark: '2026-03-01T01:30:00.000Z' }),
        failed('A1002', 'E_FORBIDDEN'),
        failed('A1003', 'E_FORBIDDEN'),
        failed('A1004', 'E_HTTP_RETRIES'),
      ],
      'partial',
      // A1003 last committed three days ago: the furthest behind
      new Map([
        ['A1002\u0000achievements', '2026-02-28T02:00:00.000Z'],
        ['A1003\u0000achievements', '2026-02-26T02:00:00.000Z'],
        ['A1004\u0000achievements', null],
      ]),
    );
    const text = renderMetrics(s, ctx, 1_772_000_000);
    const m = samples(text);
    const base = { dest: 's3://bucket/exports "nightly"', shard: '1/4' };
    const value = (name: string, labels: Record<string, string> = {}) =>
      m.get(`school_export_${name}`)?.find((x) => Object.entries({ ...base, ...labels }).every(([k, v]) => x.labels[k] === v))?.value;

    expect(m.get('school_export_rows_written')).toEqual([
      { labels: { ...base, table: 'achievements' }, value: 10 },
      { labels: { ...base, table: 'school_meta' }, value: 10 },
    ]);
    expect(value('bytes_written', { table: 'school_meta' })).toBe(100);
    expect(value('files_written', { table: 'achievements' })).toBe(1);
    expect(value('run_duration_seconds')).toBe(3600);
    expect(value('task_failures', { status: 'failed', code: 'E_FORBIDDEN' })).toBe(2);
    expect(value('task_failures', { status: 'failed', code: 'E_HTTP_RETRIES' })).toBe(1);
    expect(value('tasks', { status: 'committed' })).toBe(2);
    expect(value('tasks', { status: 'failed' })).toBe(3);
    expect(value('max_lag_seconds')).toBe(3 * 86_400);
    expect(value('run_success')).toBe(0);
    expect(value('run_status', { status: 'partial' })).toBe(1);
    expect(value('run_status', { status: 'ok' })).toBe(0);
    expect(value('records_read')).toBe(1234);
    expect(value('requests')).toBe(99);
    expect(value('run_end_timestamp_seconds')).toBe(Date.parse('2026-03-01T02:00:00.000Z') / 1000);
    // a partial run does not move the last success: the one carried over stays
    expect(value('last_success_timestamp_seconds')).toBe(1_772_000_000);
    for (const f of parsePrometheus(text)) expect(f.type, f.name).toBe('GAUGE');
  });

  it('an ok run is the last success; a run with no lag known and no earlier success leaves those series out', () => {
    const ok = renderMetrics(summary([task('A1001', 'school_meta')], 'ok'), ctx, undefined);
    expect(samples(ok).get('school_export_last_success_timestamp_seconds')?.[0]?.value).toBe(Date.parse('2026-03-01T02:00:00.000Z') / 1000);
    expect(samples(ok).get('school_export_max_lag_seconds')?.[0]?.value).toBe(3600 - 59 * 60);
    const none = renderMetrics(
      summary(
        [
          task('A1001', 'school_meta', {
            status: 'failed',
            files: [],
            rows: {},
            watermark: undefined,
            error: { code: 'E_X', message: 'x' },
          }),
        ],
        'partial',
      ),
      ctx,
      undefined,
    );
    expect(samples(none).has('school_export_last_success_timestamp_seconds')).toBe(false);
    expect(samples(none).has('school_export_max_lag_seconds')).toBe(false);
  });

  it('written with a rename (no temporary file left), carrying the last success over a failed run', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'se-metrics-'));
    try {
      const path = join(dir, 'school_export.prom');
      await writeMetricsFile(path, summary([task('A1001', 'school_meta')], 'ok'), ctx);
      const firstSuccess = previousLastSuccess(readFileSync(path, 'utf8'));
      expect(firstSuccess).toBe(Date.parse('2026-03-01T02:00:00.000Z') / 1000);
      const later = { ...ctx, finishedAt: new Date('2026-03-02T02:00:00.000Z') };
      await writeMetricsFile(
        path,
        summary([task('A1001', 'school_meta', { status: 'failed', error: { code: 'E_X', message: 'x' } })], 'partial'),
        later,
      );
      const text = readFileSync(path, 'utf8');
      expect(previousLastSuccess(text)).toBe(firstSuccess);
      expect(samples(text).get('school_export_run_end_timestamp_seconds')?.[0]?.value).toBe(later.finishedAt.getTime() / 1000);
      expect(readdirSync(dir)).toEqual(['school_export.prom']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('school-export run --metrics-file (a real run against the sandbox)', () => {
  let sb: Sandbox;
  let dir: string;
  beforeAll(async () => {
    sb = await startSandbox({ seed: 3, schools: 2, achievementsPerSchool: 30 });
    dir = mkdtempSync(join(tmpdir(), 'se-metrics-run-'));
  });
  afterAll(async () => {
    await sb.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('writes the figures the summary gives; a folder that does not exist is a usage error before any request', async () => {
    const path = join(dir, 'school_export.prom');
    const dest = join(dir, 'exports');
    const r = await runChild(sb, ['--dest', dest, '--format', 'ndjson', '--metrics-file', path, '--json']).done;
    expect(r.code, r.stderr).toBe(0);
    const summaryJson = JSON.parse(r.stdout.trim().split('\n').pop()!) as RunSummary;
    const m = samples(readFileSync(path, 'utf8'));
    for (const [table, t] of Object.entries(summaryJson.tables)) {
      expect(m.get('school_export_rows_written')!.find((x) => x.labels.table === table)?.value, table).toBe(t.rows);
    }
    expect(m.get('school_export_run_success')![0]!.value).toBe(1);
    expect(m.get('school_export_max_lag_seconds')![0]!.value).toBeGreaterThanOrEqual(0);
    expect(m.get('school_export_records_read')![0]!.value).toBe(summaryJson.throughput.recordsRead);
    expect(summaryJson.throughput.recordsRead).toBeGreaterThan(60);

    const before = sb.control.requests().length;
    const bad = await runChild(sb, ['--dest', dest, '--metrics-file', join(dir, 'no-such-folder', 'x.prom')]).done;
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(
      `--metrics-file ${join(dir, 'no-such-folder', 'x.prom')}: its folder ${join(dir, 'no-such-folder')} does not exist`,
    );
    expect(sb.control.requests().length).toBe(before);
    expect(existsSync(join(dir, 'no-such-folder'))).toBe(false);
  });
});
