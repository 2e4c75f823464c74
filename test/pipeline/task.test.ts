import { selectResources } from '../../src/resources/index.ts';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { existsSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { ApiClient } from '../../src/source/client.ts';
import { LocalSink } from '../../src/sink/local.ts';
import { formatByName } from '../../src/format/index.ts';
import { compileFlattener } from '../../src/flatten/index.ts';
import { Committer } from '../../src/manifest/committer.ts';
import { newRunId } from '../../src/manifest/run-id.ts';
import { readState, writeDirective, writeState } from '../../src/manifest/state-store.ts';
import type { ManifestTask, ResourceState } from '../../src/manifest/types.ts';
import { CheckpointPolicy } from '../../src/pipeline/checkpoints.ts';
import { discoverSchools, planTask, type PlanSettings } from '../../src/pipeline/plan.ts';
import { admitPiece, commitPiece } from '../../src/pipeline/task-commit.ts';
import { runTask, type SchoolRef, type TaskEvent, type TaskPlan, type TaskResult } from '../../src/pipeline/task.ts';
import type { ResourceSpec } from '../../src/resources/types.ts';
import type { Row } from '../../src/table.ts';
import { updatedAfterParam } from '../../src/manifest/state.ts';
import { purgeSchool } from '../../src/webhooks/purge.ts';
import { readRows } from '../helpers/read-exports.ts';
import { allSchemas, canonical, tempDir } from '../integration/helpers.ts';

/**
 * runTask against the built-in sandbox with real parts: an ApiClient, the NDJSON format, a
 * LocalSink, the Committer and commitPiece. Pages of 5 rows, so a school of 60 achievements has 12
 * pages; checkpoints are counted in pages (the clock is injected and never moves unless a test moves it).
 */
const PER_PAGE = 5;
const SCHEMAS = allSchemas();
const SPECS = new Map(selectResources(undefined, []).map((s) => [s.name, s]));
const spec = (name: string): ResourceSpec => SPECS.get(name)!;
const LOOKBACK_SECONDS = 60;
const SETTINGS: PlanSettings = { fullRefresh: false, lookbackSeconds: LOOKBACK_SECONDS, snapshotEveryHours: () => 24, windows: 1 };

interface Piece {
  task: ManifestTask;
  /** Every file the piece lists existed at its final path when the piece was handed over. */
  durable: boolean;
  /** The resource's state right after the piece was committed. */
  state: ResourceState | undefined;
}

interface Attempt {
  runId: string;
  result?: TaskResult;
  error?: unknown;
  pieces: Piece[];
  events: TaskEvent[];
  /** Pages this attempt's client requested (its own request events). */
  requests: string[];
  committer: Committer;
}

describe('runTask', () => {
  let sb: Sandbox;
  let schools: Map<string, SchoolRef>;
  let tmp: { dir: string; cleanup: () => void };
  let sink: LocalSink;
  let runNo = 0;

  beforeAll(async () => {
    sb = await startSandbox({ seed: 5, schools: 3, achievementsPerSchool: 60, maxPerPage: PER_PAGE });
    const client = new ApiClient({ apiUrl: sb.url, token: sb.tokens.full, domains: sb.domains });
    try {
      const found = await discoverSchools(client, { shard: { index: 0, count: 1 }, perPage: 100 });
      schools = new Map(found.schools.map((s) => [s.id, s]));
    } finally {
      await client.close();
    }
  });
  afterAll(async () => {
    await sb?.close();
  });
  beforeEach(() => {
    tmp = tempDir('run-task-');
    sink = new LocalSink(tmp.dir);
    sb.control.clearFaults();
  });
  afterEach(() => tmp.cleanup());

  /** Every file under the destination (temp files included). */
  function allFiles(under = ''): string[] {
    const out: string[] = [];
    const walk = (d: string) => {
      if (!existsSync(d)) return;
      for (const e of readdirSync(d, { withFileTypes: true })) {
        if (e.isDirectory()) walk(join(d, e.name));
        else out.push(relative(tmp.dir, join(d, e.name)).split('\\').join('/'));
      }
    };
    walk(join(tmp.dir, under));
    return out.sort();
  }

  const dataFiles = () => allFiles().filter((f) => !f.startsWith('_'));

  async function plan(
    schoolId: string,
    resource: string,
    o: Partial<Parameters<typeof planTask>[3]> & { settings?: PlanSettings } = {},
  ): Promise<TaskPlan> {
    const school = schools.get(schoolId)!;
    const state = await readState(sink, school.region, school.id);
    return planTask(school, spec(resource), state, { settings: SETTINGS, now: new Date(), scopeMasked: [], ...o });
  }

  /** One run's attempt at one task: its own client, committer and run id, like a new process. */
  async function attempt(
    p: TaskPlan,
    o: {
      checkpointPages?: number;
      abortAfterSeq?: number;
      token?: string;
      clock?: () => number;
      everyMs?: number;
      onPage?: () => void;
    } = {},
  ): Promise<Attempt> {
    runNo += 1;
    const runId = newRunId(new Date(Date.UTC(2026, 0, 1, 0, 0, runNo)));
    const requests: string[] = [];
    const client = new ApiClient({
      apiUrl: sb.url,
      token: o.token ?? sb.tokens.full,
      domains: sb.domains,
      onEvent: (e) => {
        if (e.type === 'request') requests.push(e.url);
      },
    });
    const committer = new Committer(sink, { version: 1, run_id: runId, started_at: new Date().toISOString(), format: 'ndjson' });
    const seqs = new Map<string, number>();
    const abort = new AbortController();
    const a: Attempt = { runId, pieces: [], events: [], requests, committer };
    try {
      a.result = await runTask(p, {
        client,
        sink,
        format: formatByName('ndjson'),
        formatOptions: {},
        runId,
        extractedAt: '2026-01-01T00:00:00.000000Z',
        perPage: PER_PAGE,
        lookbackSeconds: LOOKBACK_SECONDS,
        limits: { maxRows: 1000, maxBytes: 1 << 30 },
        nextSeq: (d) => {
          const n = (seqs.get(d) ?? 0) + 1;
          seqs.set(d, n);
          return n;
        },
        checkpoints: new CheckpointPolicy(o.checkpointPages ?? 0, o.everyMs ?? 0, o.clock ?? (() => 0)),
        admit: () => admitPiece({ sink, school: p.school, resource: p.spec.name }),
        commit: async (piece) => {
          const durable = piece.task.files.every((f) => existsSync(join(tmp.dir, f.path)));
          await commitPiece({ sink, committer, school: p.school, resource: p.spec.name }, piece);
          const state = await readState(sink, p.school.region, p.school.id);
          a.pieces.push({ task: piece.task, durable, state: state.resources[p.spec.name] });
          // A kill right after a checkpoint, at a known page.
          if (o.abortAfterSeq !== undefined && piece.task.checkpoint?.seq === o.abortAfterSeq) abort.abort();
        },
        onProgress: () => o.onPage?.(),
        onEvent: (e) => a.events.push(e),
        signal: abort.signal,
      });
    } catch (e) {
      a.error = e;
    } finally {
      // Waits for a page still in flight, so the sandbox's request log is settled when this returns.
      await client.close();
    }
    return a;
  }

  /** What the webhook receiver does on accessRevoked: the directive, then (with a purge) the removal of everything of the school. */
  async function revoke(schoolId: string, o: { purge: boolean }): Promise<void> {
    await writeDirective(sink, {
      version: 1,
      school_id: schoolId,
      force_full_seq: 0,
      deactivated: { reason: 'revoked', at: new Date().toISOString(), event: 'accessRevoked', ...(o.purge ? { purge: true } : {}) },
      updated_at: new Date().toISOString(),
    });
    if (o.purge) await purgeSchool(sink, schoolId, 'access revoked', new Date());
  }

  /** Rows of one table in the files the pieces list. */
  async function exported(pieces: Piece[], table: string): Promise<Row[]> {
    const out: Row[] = [];
    for (const p of pieces)
      for (const f of p.task.files) if (f.table === table) out.push(...(await readRows(tmp.dir, f.path, SCHEMAS.get(table)!.schema)));
    return out;
  }

  /** What the sandbox holds now for one resource of one school, flattened like an export. */
  function expected(schoolId: string, resource: string): Map<string, Row[]> {
    const school = schools.get(schoolId)!;
    const ctx = { schoolId, region: school.region, runId: 'x', extractedAt: '2026-01-01T00:00:00.000000Z' };
    return compileFlattener(spec(resource)).flattenBatch(sb.control.records(schoolId, resource), ctx);
  }

  /**
   * The exported rows are the sandbox's rows now, each once. A resumed read's catch-up may read a
   * row again in the same version (loaders resolve that by key and updated_at): `sameVersionTwice` allows that.
   */
  async function expectExactly(pieces: Piece[], schoolId: string, resource: string, o: { sameVersionTwice?: boolean } = {}): Promise<void> {
    const want = expected(schoolId, resource);
    for (const [table, rows] of want) {
      const got = canonical(await exported(pieces, table));
      expect(o.sameVersionTwice ? [...new Set(got)] : got, table).toEqual(canonical(rows));
    }
  }

  /** The sandbox's own log of the requests for one resource of one school (path and query). */
  const sandboxPages = (schoolId: string, path: string) =>
    sb.control.requests().filter((r) => r.path.includes(`/schools/${schoolId}/${path}?`));

  async function editCheckpoint(schoolId: string, resource: string, edit: (cp: NonNullable<ResourceState['checkpoint']>) => void) {
    const school = schools.get(schoolId)!;
    const st = await readState(sink, school.region, school.id);
    edit(st.resources[resource]!.checkpoint!);
    await writeState(sink, st);
  }

  it('an unchanged full read publishes nothing: one of one page never opens a data file, one of several discards its files', async () => {
    const opened: string[] = [];
    const openFile = sink.openFile.bind(sink);
    sink.openFile = (path: string) => {
      if (!path.startsWith('_')) opened.push(path);
      return openFile(path);
    };
    const meta1 = await attempt(await plan('A1001', 'school_meta'));
    expect(meta1.pieces[0]!.task).toMatchObject({ status: 'committed', content_sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(opened).toHaveLength(1);
    opened.length = 0;
    const meta2 = await attempt(await plan('A1001', 'school_meta'));
    expect(meta2.result).toMatchObject({ unchanged: true, files: 0 });
    expect(meta2.pieces.map((p) => p.task.status)).toEqual(['unchanged']);
    expect(meta2.pieces[0]!.task.content_sha256).toBe(meta1.pieces[0]!.task.content_sha256);
    expect(meta2.pieces[0]!.state!.content).toEqual({ sha256: meta1.pieces[0]!.task.content_sha256, run_id: meta1.runId });
    expect(opened).toEqual([]);

    // 15 attributes in pages of 5: the files are written as the pages come, then discarded unpublished
    await attempt(await plan('A1001', 'achievement_attributes'));
    const before = dataFiles();
    opened.length = 0;
    const attrs = await attempt(await plan('A1001', 'achievement_attributes'));
    expect(attrs.result).toMatchObject({ unchanged: true, rows: 15 });
    expect(opened.length).toBeGreaterThan(0);
    expect(dataFiles()).toEqual(before); // no temp file left, nothing new published
  });

  it('commits a checkpoint piece every N pages, files durable and listed, the cursor saved; then the final piece', async () => {
    const t0 = Date.now();
    const p = await plan('A1001', 'achievements');
    expect(p).toMatchObject({ mode: 'full', reason: 'first run' });
    sb.control.clearRequests();
    const a = await attempt(p, { checkpointPages: 4 });
    expect(a.error).toBeUndefined();
    expect(a.result).toMatchObject({ rows: 60, pieces: 3, resumed: false });

    expect(a.pieces.map((x) => x.task.checkpoint)).toEqual([
      { snapshot: a.runId, seq: 1, final: false },
      { snapshot: a.runId, seq: 2, final: false },
      { snapshot: a.runId, seq: 3, final: true },
    ]);
    expect(a.pieces.every((x) => x.durable && x.task.files.length > 0)).toBe(true);
    expect(a.pieces.map((x) => x.task.rows.achievements)).toEqual([20, 20, 20]);

    const [c1, c2] = a.pieces.map((x) => x.state?.checkpoint);
    const startedAt = c1!.started_at;
    expect(Date.parse(startedAt)).toBeGreaterThanOrEqual(Math.floor(t0 / 1000) * 1000 - 1000);
    expect(Date.parse(startedAt)).toBeLessThanOrEqual(Date.now());
    expect(c1).toEqual({
      snapshot: a.runId,
      seq: 1,
      walks: [{ next: expect.stringMatching(/^\/[^?]*\/schools\/A1001\/achievements\?.*cursor=(?!true)[^&]+/), done: false }],
      pages: 4,
      rows: 20,
      started_at: startedAt,
    });
    expect(c2).toMatchObject({ snapshot: a.runId, seq: 2, pages: 8, rows: 40, started_at: startedAt });
    expect(c2!.walks[0]!.next).not.toBe(c1!.walks[0]!.next);
    // The committed watermark is untouched until the read completes.
    expect(a.pieces[0]!.state).toMatchObject({ watermark: null, last_run_id: null, last_full_at: null });

    // The final piece: the watermark is the server's clock when the read began, the checkpoint gone.
    const final = a.pieces[2]!;
    expect(final.task.watermark).toBe(startedAt);
    expect(final.state).toEqual({ watermark: startedAt, last_run_id: a.runId, last_full_at: startedAt });
    expect(a.events).toEqual([
      { event: 'checkpoint', seq: 1, pages: 4, rows: 20 },
      { event: 'checkpoint', seq: 2, pages: 8, rows: 40 },
    ]);

    expect(sandboxPages('A1001', 'achievements')).toHaveLength(12);
    expect(a.requests).toHaveLength(12);
    await expectExactly(a.pieces, 'A1001', 'achievements');
    // Nothing on disk that no piece lists, no temp file.
    expect(dataFiles()).toEqual(a.pieces.flatMap((x) => x.task.files.map((f) => f.path)).sort());
    expect(a.committer.snapshot().tasks).toHaveLength(3);
  });

  it('checkpoints by the injected clock when pages do not say so', async () => {
    let now = 0;
    const p = await plan('A1003', 'achievements');
    // Each page "takes" 500 ms: a checkpoint every 1000 ms is one every two pages.
    const a = await attempt(p, { everyMs: 1000, clock: () => now, onPage: () => (now += 500) });
    expect(a.error).toBeUndefined();
    expect(a.pieces.map((x) => x.state?.checkpoint?.pages ?? 'final')).toEqual([2, 4, 6, 8, 10, 'final']);
    expect(a.pieces.map((x) => x.task.rows.achievements)).toEqual([10, 10, 10, 10, 10, 10]);
  });

  it('an aborted read leaves only its committed pieces; the next run resumes at the cursor, reads the rest, then catches up from the first start', async () => {
    const first = await attempt(await plan('A1001', 'achievements'), { checkpointPages: 4, abortAfterSeq: 2 });
    expect(first.error).toMatchObject({ name: 'AbortError' });
    expect(first.pieces).toHaveLength(2);
    // Abort leaves no file behind: what is on disk is exactly what the two pieces list.
    expect(dataFiles()).toEqual(first.pieces.flatMap((x) => x.task.files.map((f) => f.path)).sort());
    expect(allFiles().filter((f) => f.split('/').pop()!.startsWith('.'))).toEqual([]);

    // Make the first attempt's start distinguishable from anything the second could see.
    const saved = first.pieces[1]!.state!.checkpoint!;
    const firstStart = new Date(Date.parse(saved.started_at) - 3600_000).toISOString();
    await editCheckpoint('A1001', 'achievements', (cp) => (cp.started_at = firstStart));
    // Meanwhile a row the first attempt already read changes upstream.
    const changedId = String(sb.control.records('A1001', 'achievements')[3]!.id);
    sb.control.update('A1001', 'achievements', changedId, { points: 4242 });

    const p = await plan('A1001', 'achievements');
    expect(p).toMatchObject({ mode: 'full', reason: 'resuming a full read committed up to page 8' });
    expect(p.resume).toMatchObject({ snapshot: first.runId, seq: 2, pages: 8, rows: 40, walks: saved.walks });

    sb.control.clearRequests();
    const t1 = Date.now();
    const second = await attempt(p, { checkpointPages: 4 });
    expect(second.error).toBeUndefined();
    expect(second.result).toMatchObject({ resumed: true, pieces: 3 });
    expect(second.events[0]).toEqual({ event: 'resumed', seq: 2, pages: 8, rows: 40 });

    // Pages 9 to 12 from the saved cursor, then one walk of what changed since the first start.
    const pages = sandboxPages('A1001', 'achievements');
    expect(pages.map((r) => r.path)).toEqual([
      saved.walks[0]!.next,
      ...Array<unknown>(3).fill(expect.stringMatching(/cursor=(?!true)[^&]+/)),
      expect.stringContaining(`updated_after=${encodeURIComponent(updatedAfterParam(firstStart, LOOKBACK_SECONDS)).replace(/%20/g, '+')}`),
    ]);
    expect(second.requests).toHaveLength(5);

    // The piece continues the snapshot the first attempt began; its watermark is the catch-up's start.
    expect(second.pieces.map((x) => x.task.checkpoint)).toEqual([{ snapshot: first.runId, seq: 3, final: true }]);
    const watermark = second.pieces[0]!.task.watermark!;
    expect(Date.parse(watermark)).toBeGreaterThanOrEqual(Math.floor(t1 / 1000) * 1000 - 1000);
    expect(second.pieces[0]!.state).toEqual({ watermark, last_run_id: second.runId, last_full_at: watermark });

    // Both attempts together hold every row as it is now: the changed row in its new version.
    const rows = [...(await exported(first.pieces, 'achievements')), ...(await exported(second.pieces, 'achievements'))];
    expect(rows.filter((r) => r.id === changedId).map((r) => r.points)).toContain(4242);
    const latest = new Map<string, Row>();
    for (const r of rows)
      if (!latest.has(String(r.id)) || String(r.updated_at) > String(latest.get(String(r.id))!.updated_at)) latest.set(String(r.id), r);
    expect(canonical([...latest.values()])).toEqual(canonical(expected('A1001', 'achievements').get('achievements')!));
  });

  it('a saved cursor the service refuses (400) reads again from page 1, as a new snapshot', async () => {
    const first = await attempt(await plan('A1001', 'achievements'), { checkpointPages: 4, abortAfterSeq: 1 });
    expect(first.pieces).toHaveLength(1);
    const oldStart = new Date(Date.parse(first.pieces[0]!.state!.checkpoint!.started_at) - 3600_000).toISOString();
    await editCheckpoint('A1001', 'achievements', (cp) => (cp.started_at = oldStart));
    sb.control.invalidateCursors();

    sb.control.clearRequests();
    const second = await attempt(await plan('A1001', 'achievements'), { checkpointPages: 4 });
    expect(second.error).toBeUndefined();
    expect(second.events.map((e) => e.event)).toEqual(['resumed', 'resume_refused', 'checkpoint', 'checkpoint']);
    expect(second.result).toMatchObject({ rows: 60, resumed: false, pieces: 3 });
    expect(second.pieces.map((x) => x.task.checkpoint)).toEqual([
      { snapshot: second.runId, seq: 1, final: false },
      { snapshot: second.runId, seq: 2, final: false },
      { snapshot: second.runId, seq: 3, final: true },
    ]);
    const pages = sandboxPages('A1001', 'achievements');
    expect(pages.map((r) => r.status)).toEqual([400, ...Array<number>(12).fill(200)]);

    // A new snapshot starts its own clock: the refused read's start is not its watermark.
    const newStart = second.pieces[0]!.state!.checkpoint!.started_at;
    expect(newStart).not.toBe(oldStart);
    expect(second.pieces[2]!.state).toEqual({ watermark: newStart, last_run_id: second.runId, last_full_at: newStart });
    await expectExactly(second.pieces, 'A1001', 'achievements');
  });

  it('detects deletions by snapshot across checkpoint chunks, also when the read resumed in a later run', async () => {
    // A first full snapshot of 12 aspects, in three pieces of one page each.
    const base = await attempt(await plan('A1002', 'assessment_aspects'), { checkpointPages: 1 });
    expect(base.error).toBeUndefined();
    expect(base.pieces.map((x) => x.state?.checkpoint?.ids_files?.length ?? 'final')).toEqual([1, 2, 'final']);
    const ids = sb.control.records('A1002', 'assessment_aspects').map((r) => String(r.id));
    expect(ids).toHaveLength(12);
    const baseline = base.pieces[2]!.state!.known_ids_file!;
    // Chunks go once the baseline they make up is referenced from state.
    expect(allFiles('_state/ids')).toEqual([baseline]);

    // One row of the first page and one of the last go upstream.
    sb.control.remove('A1002', 'assessment_aspects', ids[1]!);
    sb.control.remove('A1002', 'assessment_aspects', ids[10]!);

    // The next snapshot is due (a day later); it is killed after its first piece, then resumed.
    const later = new Date(Date.now() + 2 * 86_400_000);
    const p = await plan('A1002', 'assessment_aspects', { now: later });
    expect(p).toMatchObject({ mode: 'full', reason: 'snapshot due', knownIdsFile: baseline });
    const killed = await attempt(p, { checkpointPages: 1, abortAfterSeq: 1 });
    expect(killed.error).toMatchObject({ name: 'AbortError' });
    expect(killed.pieces.map((x) => x.task.rows.deletions ?? 0)).toEqual([0]);

    const resumed = await attempt(await plan('A1002', 'assessment_aspects', { now: later }), { checkpointPages: 1 });
    expect(resumed.error).toBeUndefined();
    const pieces = [...killed.pieces, ...resumed.pieces];
    const deletions = resumed.committer.snapshot().deletions;
    expect(deletions.map((d) => d.id).sort()).toEqual([ids[1], ids[10]].sort());
    const detectedAt = resumed.pieces.at(-1)!.state!.last_full_at!;
    expect(deletions.every((d) => d.detected_by === 'snapshot' && d.deleted_at === detectedAt.replace('Z', '000Z'))).toBe(true);
    expect((await exported(pieces, 'deletions')).map((r) => r.id).sort()).toEqual([ids[1], ids[10]].sort());
    expect(resumed.pieces.at(-1)!.task.rows.deletions).toBe(2);

    // The new baseline holds the ten rows left; the old baseline and every chunk are gone.
    const state = resumed.pieces.at(-1)!.state!;
    expect(state.known_ids_file).toBe(`_state/ids/region=apac/school_id=A1002/assessment_aspects-${resumed.runId}.json.gz`);
    expect(allFiles('_state/ids')).toEqual([state.known_ids_file]);
    await expectExactly(pieces, 'A1002', 'assessment_aspects');
  });

  it('a read split into updated_at windows (big schools) holds every row once, also when killed and resumed', async () => {
    const windowed = { ...SETTINGS, windows: 3 };
    // Rows changed lately land in the last window; the rest were last changed long ago: both windows have pages.
    for (const r of sb.control.records('A1002', 'achievements').slice(20, 35))
      sb.control.update('A1002', 'achievements', String(r.id), { points: 7 });
    const whole = await attempt(await plan('A1002', 'achievements', { settings: windowed }), { checkpointPages: 0 });
    expect(whole.error).toBeUndefined();
    await expectExactly(whole.pieces, 'A1002', 'achievements');

    // Again from nothing, killed after its first checkpoint: every window's cursor is saved.
    tmp.cleanup();
    tmp = tempDir('run-task-');
    sink = new LocalSink(tmp.dir);
    const killed = await attempt(await plan('A1002', 'achievements', { settings: windowed }), { checkpointPages: 2, abortAfterSeq: 1 });
    expect(killed.error).toMatchObject({ name: 'AbortError' });
    const saved = killed.pieces[0]!.state!.checkpoint!;
    expect(saved.walks.length).toBeGreaterThan(1);
    expect(saved.walks.filter((w) => w.next).length).toBeGreaterThan(1); // more than one window had more pages
    expect(saved.boundaries).toHaveLength(saved.walks.length - 1);
    const resumed = await attempt(await plan('A1002', 'achievements', { settings: windowed }), { checkpointPages: 2 });
    expect(resumed.error).toBeUndefined();
    expect(resumed.result?.resumed).toBe(true);
    await expectExactly([...killed.pieces, ...resumed.pieces], 'A1002', 'achievements', { sameVersionTwice: true });
  });

  it('a school revoked while its task reads commits nothing more: the refused piece leaves no file', async () => {
    const first = await attempt(await plan('A1001', 'achievements'), { checkpointPages: 4, abortAfterSeq: 1 });
    const kept = first.pieces.flatMap((x) => x.task.files.map((f) => f.path)).sort();
    // The receiver hears accessRevoked (no purge) while page 6 is on its way.
    sb.control.clearRequests();
    const off = sb.control.onRequest({ school: 'A1001', resource: 'achievements', page: 2 }, async () => {
      await revoke('A1001', { purge: false });
    });
    try {
      const second = await attempt(await plan('A1001', 'achievements'), { checkpointPages: 4 });
      expect(second.error).toMatchObject({ code: 'E_PURGED', school: 'A1001' });
      expect(second.pieces).toEqual([]);
      expect(second.committer.snapshot().tasks).toEqual([]);
    } finally {
      off();
    }
    // What was committed before the revocation stays (no purge); nothing else, no temp file.
    expect(dataFiles()).toEqual(kept);
  });

  it('a school purged while its task reads keeps nothing, not even the id list its snapshot wrote', async () => {
    const p = await plan('A1003', 'assessment_aspects');
    // The receiver hears accessRevoked with purge while the last page is on its way: it writes the
    // directive, then removes everything of the school it finds (nothing committed yet).
    sb.control.clearRequests();
    const off = sb.control.onRequest({ school: 'A1003', resource: 'assessment/aspects', page: 3 }, async () => {
      await revoke('A1003', { purge: true });
    });
    try {
      const a = await attempt(p, { checkpointPages: 0 });
      expect(a.error).toMatchObject({ code: 'E_PURGED', school: 'A1003' });
      expect(a.pieces).toEqual([]);
    } finally {
      off();
    }
    const left = allFiles().filter((f) => f.includes('school_id=A1003') && !f.startsWith('_state/_directives/'));
    expect(left).toEqual([]);
  });

  it('a read forced by a directive and killed after a checkpoint resumes under the same directive', async () => {
    const school = schools.get('A1003')!;
    await writeState(sink, {
      version: 1,
      school_id: 'A1003',
      region: school.region,
      resources: {
        achievements: { watermark: '2026-01-01T00:00:00.000Z', last_run_id: 'r0', last_full_at: null, applied_force_full_seq: 1 },
      },
    });
    const directive = {
      version: 1 as const,
      school_id: 'A1003',
      force_full_seq: 2,
      deactivated: null,
      updated_at: '2026-01-01T00:00:00.000Z',
    };
    await writeDirective(sink, directive);

    const forced = await plan('A1003', 'achievements', { directive });
    expect(forced).toMatchObject({ mode: 'full', reason: 'directive (approval or migration)', forceFullSeq: 2 });
    const killed = await attempt(forced, { checkpointPages: 4, abortAfterSeq: 2 });
    expect(killed.pieces).toHaveLength(2);

    // The directive has not changed since the read began: its ids are the ones the read saw.
    // Dropping the resume would read the school from page 1 in every run a kill interrupts.
    const next = await plan('A1003', 'achievements', { directive });
    expect(next.resume?.walks).toEqual(killed.pieces[1]!.state!.checkpoint!.walks);
  });

  it('rows read without a scope before a resume are read again once the scope is granted', async () => {
    // The first attempt runs with a token lacking achievements.comment, and is killed after 4 pages.
    const masked = await plan('A1003', 'achievements', { scopeMasked: ['achievements.comment'] });
    const first = await attempt(masked, { checkpointPages: 4, abortAfterSeq: 1, token: sb.tokens.limited });
    expect(first.pieces.map((x) => x.task.scope_masked)).toEqual([{ achievements: ['comment'] }]);
    expect((await exported(first.pieces, 'achievements')).every((r) => r.comment === null)).toBe(true);

    // The scope is granted; the next runs plan as a run would (the permissions now mask nothing).
    const pieces: Piece[] = [...first.pieces];
    for (let run = 0; run < 2; run++) {
      const a = await attempt(await plan('A1003', 'achievements'), { checkpointPages: 4 });
      expect(a.error).toBeUndefined();
      pieces.push(...a.pieces);
    }
    // Every row has been exported at least once with the scope (its comment as it is upstream).
    const withScope = new Set(
      (
        await exported(
          pieces.filter((x) => !x.task.scope_masked),
          'achievements',
        )
      ).map((r) => String(r.id)),
    );
    const missing = sb.control.records('A1003', 'achievements').filter((r) => !withScope.has(String(r.id)));
    expect(missing.map((r) => r.id)).toEqual([]);
  });

  it('a read restarted from page 1 after a refused cursor leaves no id list of the abandoned read behind', async () => {
    const first = await attempt(await plan('A1001', 'assessment_aspects'), { checkpointPages: 1, abortAfterSeq: 1 });
    expect(first.pieces[0]!.state!.checkpoint!.ids_files).toHaveLength(1);
    sb.control.invalidateCursors();
    const second = await attempt(await plan('A1001', 'assessment_aspects'), { checkpointPages: 1 });
    expect(second.events.map((e) => e.event)).toContain('resume_refused');
    const state = second.pieces.at(-1)!.state!;
    expect(state.checkpoint).toBeUndefined();
    expect(allFiles('_state/ids')).toEqual([state.known_ids_file]);
  });

  for (const purge of [false, true]) {
    it(`an unchanged full read of a school revoked while it reads (${purge ? 'with' : 'without'} a purge): ${purge ? 'nothing of the school remains' : 'its state advances, no file'}`, async () => {
      await attempt(await plan('A1002', 'achievement_attributes'));
      const before = dataFiles();
      sb.control.clearRequests();
      const off = sb.control.onRequest({ school: 'A1002', resource: 'achievements/attributes', page: 3 }, async () => {
        await revoke('A1002', { purge });
      });
      try {
        const again = await attempt(await plan('A1002', 'achievement_attributes'));
        if (purge) {
          // no request was needed before the state write: the check after it removes the state
          expect(again.error).toMatchObject({ code: 'E_PURGED', school: 'A1002' });
          expect(allFiles().filter((f) => f.includes('school_id=A1002') && !f.startsWith('_state/_directives/'))).toEqual([]);
        } else {
          // committed before the revocation took effect, like the school's earlier data: kept
          expect(again.error).toBeUndefined();
          expect(again.pieces.map((x) => x.task.status)).toEqual(['unchanged']);
          expect(dataFiles()).toEqual(before);
        }
      } finally {
        off();
      }
    });
  }
});
