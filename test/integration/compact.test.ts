import { appendFileSync, existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compactDestination, type CompactCommandOptions } from '../../src/compact/run.ts';
import type { CompactStep } from '../../src/compact/compact.ts';
import { exitCodeFor } from '../../src/cli/commands.ts';
import { compactCommandRun } from '../../src/cli/compact.ts';
import { ExportError } from '../../src/errors.ts';
import { acquireLease } from '../../src/manifest/lease.ts';
import type { Manifest, RunManifest } from '../../src/manifest/types.ts';
import type { PipelineConfig } from '../../src/config/schema.ts';
import { openSink } from '../../src/sink/index.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import type { Row } from '../../src/table.ts';
import { builtinTables, warehouseLoad } from '../../src/warehouse/commands.ts';
import { runStaticScript } from '../warehouse/fixtures.ts';
import { currentTables } from '../warehouse/tables.ts';
import { approvedSchools, canonical, expectedState, exportOnce, tempDir } from './helpers.ts';

/**
 * `compact` against real exports of the sandbox: several incremental nights in each format,
 * then compaction; the warehouse (`warehouse load`, and the DuckDB rendering of the static plan
 * for Parquet) equals the sandbox before and after, also when the load was behind (runs pending
 * across the compaction), when a compaction stopped at a known step, and when it is run again.
 */
const KNOWN_TABLES = builtinTables().map((t) => t.name);

type Fmt = 'parquet' | 'ndjson' | 'ndjson.gz' | 'csv';
const formatConfig = (f: Fmt): PipelineConfig => (f === 'ndjson.gz' ? { format: 'ndjson', gzip: true } : { format: f });

/** Data files under dest (not _manifests, _state), relative. */
function dataFiles(dest: string): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (!e.name.startsWith('.')) out.push(relative(dest, p));
    }
  };
  for (const top of readdirSync(dest)) if (!top.startsWith('_')) walk(join(dest, top));
  return out.sort();
}

/** Files per partition folder. */
function perPartition(dest: string): Map<string, string[]> {
  const m = new Map<string, string[]>();
  for (const f of dataFiles(dest)) {
    const dir = f.slice(0, f.lastIndexOf('/'));
    m.set(dir, [...(m.get(dir) ?? []), f]);
  }
  return m;
}

describe('compact (local destinations)', () => {
  let sb: Sandbox;
  let schools: { id: string; region: string }[] = [];
  const tmp = tempDir('compact-');

  beforeAll(async () => {
    sb = await startSandbox({ seed: 31, schools: 2, achievementsPerSchool: 20 });
    schools = await approvedSchools(sb);
  });
  afterAll(async () => {
    await sb?.close();
    tmp.cleanup();
  });

  const regionOf = (id: string) => schools.find((s) => s.id === id)!.region;
  const ids = () => schools.map((s) => s.id);

  async function expectEqualsSandbox(db: string): Promise<void> {
    const expected = await expectedState(sb, ids(), regionOf);
    const actual = await currentTables(db);
    for (const [table, rows] of expected) {
      const got = (actual.get(table) ?? []).filter((r: Row) => ids().includes(String(r._school_id)));
      expect({ table, rows: canonical(got) }).toEqual({ table, rows: canonical(rows) });
    }
  }

  /** One night: some rows change upstream (an update, a deletion, new rows), then an incremental run. */
  async function night(dest: string, fmt: Fmt, n: number): Promise<void> {
    for (const s of ids()) {
      const ach = sb.control.records(s, 'achievements').map((r) => (r as { id: string }).id);
      sb.control.update(s, 'achievements', ach[n]!, { comment: `night ${n}` });
      if (n % 2 === 0) sb.control.remove(s, 'achievements', ach[n + 5]!);
      sb.control.add(s, 'achievements', 2);
    }
    const r = await exportOnce(sb, dest, formatConfig(fmt));
    expect(r.failures).toEqual([]);
  }

  const compactOpts = (dest: string, extra: Partial<CompactCommandOptions> = {}): CompactCommandOptions => ({
    dest,
    knownTables: KNOWN_TABLES,
    ...extra,
  });

  for (const fmt of ['parquet', 'ndjson', 'ndjson.gz', 'csv'] as const) {
    it(`${fmt}: after several nights, one file per partition and the warehouse equals the sandbox before and after (a load behind included)`, async () => {
      const dest = join(tmp.dir, `exports-${fmt.replace('.', '-')}`);
      const behind = join(tmp.dir, `behind-${fmt}.duckdb`);
      const before = join(tmp.dir, `before-${fmt}.duckdb`);
      const after = join(tmp.dir, `after-${fmt}.duckdb`);
      expect((await exportOnce(sb, dest, formatConfig(fmt))).failures).toEqual([]);
      await night(dest, fmt, 1);
      // this warehouse is loaded up to night 1; nights 2 and 3 are pending across the compaction
      await warehouseLoad({ dest, into: `duckdb:${behind}` });
      await night(dest, fmt, 2);
      await night(dest, fmt, 3);
      const many = [...perPartition(dest).values()].filter((f) => f.length > 1).length;
      expect(many).toBeGreaterThan(5);
      const filesBefore = dataFiles(dest).length;

      // before: `warehouse load` (and for Parquet the static plan's DuckDB rendering) equal the sandbox
      const load = (db: string) =>
        fmt === 'parquet' ? runStaticScript(dest, db, builtinTables()) : warehouseLoad({ dest, into: `duckdb:${db}` });
      await load(before);
      await expectEqualsSandbox(before);

      const res = await compactDestination(compactOpts(dest));
      expect(res.problems).toBe(0);
      expect(res.filesMerged).toBeGreaterThan(res.filesWritten);
      expect(res.partitions).toBe(many);
      expect(res.bytesAfter).toBeGreaterThan(0);
      for (const [dir, files] of perPartition(dest)) expect({ dir, files: files.length }).toEqual({ dir, files: 1 });
      expect(dataFiles(dest).length).toBeLessThan(filesBefore);
      // its manifest: kind 'compaction', entries 'compacted' naming their sources
      const run = JSON.parse(readFileSync(join(dest, '_manifests', `${res.runId}.json`), 'utf8')) as RunManifest;
      expect(run).toMatchObject({ version: 2, kind: 'compaction', status: 'ok' });
      const part = JSON.parse(readFileSync(join(dest, run.parts[0]!.path), 'utf8')) as Manifest;
      expect(part.tasks.every((t) => t.status === 'compacted' && t.compaction!.sources.length > 1)).toBe(true);
      // a text file records its longest line (loaders size their readers from it); Parquet has none
      const lines = part.tasks.map((t) => t.files[0]!.max_line_bytes);
      if (fmt === 'parquet') expect(lines.every((n) => n === undefined)).toBe(true);
      else expect(lines.every((n) => typeof n === 'number' && n > 0)).toBe(true);

      // after: the warehouse loaded before loads again and stays equal; one loaded from scratch equals it
      await load(before);
      await expectEqualsSandbox(before);
      await load(after);
      await expectEqualsSandbox(after);
      // the load that was behind applies nights 2 and 3 from the compacted files
      const caughtUp = await warehouseLoad({ dest, into: `duckdb:${behind}` });
      expect(caughtUp.appliedRuns.length).toBe(2);
      await expectEqualsSandbox(behind);

      if (fmt === 'csv' || fmt === 'parquet') {
        // nothing more to do; after one more night the new file joins the compacted one
        expect((await compactDestination(compactOpts(dest))).filesWritten).toBe(0);
        await night(dest, fmt, 4);
        const next = await compactDestination(compactOpts(dest));
        expect(next.filesWritten).toBeGreaterThan(0);
        for (const [dir, files] of perPartition(dest)) expect({ dir, files: files.length }).toEqual({ dir, files: 1 });
        await warehouseLoad({ dest, into: `duckdb:${behind}` });
        await expectEqualsSandbox(behind);
      }
    });
  }

  for (const at of ['file-written', 'manifest-written'] as const) {
    it(`a compaction stopped after "${at}" leaves a destination that loads exactly, and a rerun completes it`, async () => {
      const fmt: Fmt = at === 'file-written' ? 'parquet' : 'ndjson';
      const dest = join(tmp.dir, `crash-${at}`);
      expect((await exportOnce(sb, dest, formatConfig(fmt))).failures).toEqual([]);
      await night(dest, fmt, 1);
      const behind = join(tmp.dir, `crash-behind-${at}.duckdb`);
      await warehouseLoad({ dest, into: `duckdb:${behind}` });
      await night(dest, fmt, 2);
      const filesBefore = dataFiles(dest);

      let hits = 0;
      const step = (s: CompactStep): void => {
        if (s === at && ++hits === 3) throw new Error(`stopped at ${s}`);
      };
      // one compacted file per batch: the third batch stops after its file or after its manifest part
      await expect(compactDestination(compactOpts(dest, { step, batchFiles: 1 }))).rejects.toThrow(`stopped at ${at}`);
      const files = dataFiles(dest);
      const compacted = files.filter((f) => f.includes('-compact-'));
      expect(compacted.length).toBe(3);
      const manifests = readdirSync(join(dest, '_manifests'));
      const runDir = manifests.find((m) => m.includes('-compact-') && !m.endsWith('.json'));
      expect(manifests.some((m) => m.includes('-compact-') && m.endsWith('.json'))).toBe(false); // no run manifest
      expect(runDir ? readdirSync(join(dest, '_manifests', runDir)).length : 0).toBe(at === 'file-written' ? 2 : 3);
      // the stopped batch: its file is listed in no part (file-written), or listed with all its inputs still there
      const parts = readdirSync(join(dest, '_manifests', runDir!)).map(
        (p) => JSON.parse(readFileSync(join(dest, '_manifests', runDir!, p), 'utf8')) as Manifest,
      );
      const listed = parts.flatMap((p) => p.tasks);
      expect(listed.length).toBe(at === 'file-written' ? 2 : 3);
      const last = listed.find((t) => t.checkpoint?.seq === 3);
      if (at === 'file-written') expect(last).toBeUndefined();
      else for (const input of last!.compaction!.inputs) expect(files).toContain(input);
      for (const t of listed.filter((x) => x !== last)) for (const input of t.compaction!.inputs) expect(files).not.toContain(input);
      const removed = listed.filter((x) => x !== last).flatMap((t) => t.compaction!.inputs);
      expect(files.length).toBe(filesBefore.length + 3 - removed.length);
      const mid = join(tmp.dir, `crash-mid-${at}.duckdb`);
      await warehouseLoad({ dest, into: `duckdb:${mid}` });
      await expectEqualsSandbox(mid);
      if (fmt === 'parquet') {
        await runStaticScript(dest, join(tmp.dir, `crash-static-${at}.duckdb`), builtinTables());
        await expectEqualsSandbox(join(tmp.dir, `crash-static-${at}.duckdb`));
      }

      const rerun = await compactDestination(compactOpts(dest));
      expect(rerun.problems).toBe(0);
      for (const [dir, f] of perPartition(dest)) expect({ dir, files: f.length }).toEqual({ dir, files: 1 });
      expect(rerun.leftoversRemoved).toBe(at === 'manifest-written' ? 3 : 0);
      expect(dataFiles(dest).filter((f) => f.includes(rerun.runId)).length).toBe(rerun.filesWritten);
      await warehouseLoad({ dest, into: `duckdb:${behind}` });
      await expectEqualsSandbox(behind);
      if (fmt === 'parquet') {
        await runStaticScript(dest, join(tmp.dir, `crash-static-${at}.duckdb`), builtinTables());
        await expectEqualsSandbox(join(tmp.dir, `crash-static-${at}.duckdb`));
      }
    });
  }

  it('a compaction during a load: the load reads the manifests written since and stays exact', async () => {
    const dest = join(tmp.dir, 'during-load');
    expect((await exportOnce(sb, dest, { format: 'parquet' })).failures).toEqual([]);
    await night(dest, 'parquet', 1);
    await night(dest, 'parquet', 2);
    const db = join(tmp.dir, 'during-load.duckdb');
    const sink = await openSink(dest, { readOnly: true });
    const progress: string[] = [];
    let compacted: Awaited<ReturnType<typeof compactDestination>> | undefined;
    try {
      const { loadIntoDuckDb } = await import('../../src/warehouse/duckdb-load.ts');
      await loadIntoDuckDb({
        sink,
        dbPath: db,
        tables: builtinTables(),
        onProgress: (m) => progress.push(m),
        // the load has read the manifests and checked this batch's files: now they are compacted away
        beforeStage: async () => {
          compacted ??= await compactDestination(compactOpts(dest));
        },
      });
    } finally {
      await sink.close();
    }
    expect(compacted!.filesWritten).toBeGreaterThan(0);
    expect(progress.some((m) => m.includes('removed meanwhile'))).toBe(true);
    await expectEqualsSandbox(db);
  });

  it('refuses while a run holds the lease (exit 2, one line), and bad input before any write', async () => {
    const dest = join(tmp.dir, 'leased');
    expect((await exportOnce(sb, dest, { format: 'ndjson' })).failures).toEqual([]);
    await night(dest, 'ndjson', 1);
    const filesBefore = dataFiles(dest);
    const sink = await openSink(dest, { readOnly: true });
    const lease = await acquireLease(sink, { runId: '20261126T000000.000Z-beef', shard: { index: 0, count: 2 }, waitSeconds: 0 });
    try {
      const err = await compactDestination(compactOpts(dest)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ExportError);
      expect((err as ExportError).code).toBe('E_LOCKED');
      expect(exitCodeFor(err)).toBe(2);
      expect((err as Error).message).not.toContain('\n');
      expect(dataFiles(dest)).toEqual(filesBefore);
    } finally {
      await lease.release();
      await sink.close();
    }
    for (const bad of [{ tables: ['achievments'] }, { schools: ['../x'] }, { olderThanDays: -1 }]) {
      const err = await compactDestination(compactOpts(dest, bad)).catch((e: unknown) => e);
      expect(exitCodeFor(err)).toBe(2);
      expect(existsSync(join(dest, '_state', '_locks', 'run.json'))).toBe(false);
    }
    const err = await compactDestination(compactOpts(join(tmp.dir, 'no-such-export'))).catch((e: unknown) => e);
    expect(exitCodeFor(err)).toBe(2);
    expect(existsSync(join(tmp.dir, 'no-such-export'))).toBe(false);

    // the command: progress per school and one summary line on stderr, the result as JSON on stdout when piped
    const err2: string[] = [];
    const out: string[] = [];
    const io = { err: { write: (s: string) => err2.push(s) }, out: { isTTY: false, write: (s: string) => out.push(s) } };
    expect(await compactCommandRun({ dest }, io)).toBe(0);
    const text = err2.join('');
    expect(text).toMatch(/\[2\/2\] school A\d+: \d+ file\(s\) into \d+/);
    expect(text).toMatch(/^compacted \d+ file\(s\) into \d+ in \d+ partition\(s\) of 2 school\(s\): [\d.]+ MB before, [\d.]+ MB after$/m);
    expect(JSON.parse(out.join(''))).toMatchObject({ schools: 2, problems: 0 });
    await expect(compactCommandRun({ dest, 'older-than': 'soon' }, io)).rejects.toThrow('--older-than soon: expected a number of days');
  });

  it('a file that changed after its run committed is left as it is, named, and the exit status is 1', async () => {
    const dest = join(tmp.dir, 'tampered');
    expect((await exportOnce(sb, dest, { format: 'ndjson' })).failures).toEqual([]);
    await night(dest, 'ndjson', 1);
    const victim = dataFiles(dest).find((f) => f.startsWith('achievements/'))!;
    appendFileSync(join(dest, victim), '{"id":"A999"}\n');
    const err: string[] = [];
    const io = { err: { write: (x: string) => err.push(x) }, out: { isTTY: true, write: () => true } };
    expect(await compactCommandRun({ dest }, io)).toBe(1);
    expect(err.join('')).toContain(`left as it is: ${victim}: ${victim} does not match the checksum its manifest recorded`);
    expect(err.join('')).toMatch(/; 1 file\(s\) could not be compacted/);
    expect(existsSync(join(dest, victim))).toBe(true);
    const dir = victim.slice(0, victim.lastIndexOf('/'));
    expect(perPartition(dest).get(dir)!.length).toBeGreaterThan(1);
    expect([...perPartition(dest)].filter(([d]) => d !== dir).every(([, f]) => f.length === 1)).toBe(true);
  });

  it('--older-than, --schools and --tables choose what is merged', async () => {
    const dest = join(tmp.dir, 'filtered');
    expect((await exportOnce(sb, dest, { format: 'csv' })).failures).toEqual([]);
    await night(dest, 'csv', 1);
    await night(dest, 'csv', 2);
    // every run is from today: nothing is older than a day
    expect((await compactDestination(compactOpts(dest, { olderThanDays: 1 }))).filesWritten).toBe(0);
    const [one] = ids();
    const res = await compactDestination(compactOpts(dest, { schools: [one!], tables: ['achievements'] }));
    expect(res.filesWritten).toBe(1);
    const parts = perPartition(dest);
    for (const [dir, files] of parts) {
      const chosen = dir.startsWith('achievements/') && dir.endsWith(`school_id=${one}`);
      if (chosen) expect(files.length).toBe(1);
    }
    expect([...parts.values()].some((f) => f.length > 1)).toBe(true);
    // ten days on, everything is older than a week
    const later = await compactDestination(compactOpts(dest, { olderThanDays: 7, now: () => new Date(Date.now() + 10 * 86_400_000) }));
    expect(later.filesWritten).toBeGreaterThan(0);
    for (const [dir, files] of perPartition(dest)) expect({ dir, files: files.length }).toEqual({ dir, files: 1 });
    const db = join(tmp.dir, 'filtered.duckdb');
    await warehouseLoad({ dest, into: `duckdb:${db}` });
    await expectEqualsSandbox(db);
  });
});
