import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { LocalSink } from '../../src/sink/local.ts';
import { formatByName } from '../../src/format/index.ts';
import { resourceByName } from '../../src/resources/index.ts';
import { finishSnapshot, writeKeyChunk } from '../../src/pipeline/snapshot-deletions.ts';
import { TaskOutput } from '../../src/pipeline/task-output.ts';
import type { TaskPlan } from '../../src/pipeline/task.ts';
import type { Row } from '../../src/table.ts';

const RUN = '20260102T000000.000Z-bbbb';
const EARLIER = '20260101T000000.000Z-aaaa';
const IDS_DIR = '_state/ids/region=uk/school_id=A1001';
const spec = resourceByName('assessment_aspects')!;
const at = { date: '2026-01-01 00:00:00.000000', timezone_type: 3, timezone: 'UTC' };
const record = (id: string) => ({ id, name: `aspect ${id}`, created_at: at, updated_at: at });

const plan = (knownIdsFile?: string): TaskPlan => ({
  school: { id: 'A1001', region: 'uk', domain: 'api.sandbox.test', record: {} },
  spec,
  mode: 'full',
  scopeMasked: [],
  previousWatermark: null,
  reason: 'snapshot due',
  windows: 1,
  ...(knownIdsFile ? { knownIdsFile } : {}),
});

describe('snapshot-detected deletions', () => {
  let dir: string;
  let sink: LocalSink;
  let output: TaskOutput;
  const seqs = new Map<string, number>();
  const ids = (path: string): string[] => JSON.parse(gunzipSync(readFileSync(join(dir, path))).toString('utf8')) as string[];
  const writeList = async (path: string, list: string[]) => {
    // Baselines are written the way a finished snapshot writes them (gzip JSON array).
    await sink.writeAtomic(path, gzipSync(JSON.stringify(list)));
  };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'snapshot-del-'));
    sink = new LocalSink(dir);
    seqs.clear();
    output = new TaskOutput({
      spec,
      school: plan().school,
      sink,
      format: formatByName('ndjson'),
      formatOptions: {},
      runId: RUN,
      extractedAt: '2026-01-02T00:00:00.000000Z',
      limits: { maxRows: 1000, maxBytes: 1 << 30 },
      nextSeq: (d) => {
        const n = (seqs.get(d) ?? 0) + 1;
        seqs.set(d, n);
        return n;
      },
      collectKeys: true,
    });
  });
  afterEach(async () => {
    await output.abort();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a read that starts over (a refused cursor) forgets the rows and keys written since the last commit', async () => {
    await output.writeRecords([record('A1'), record('A2')]);
    await output.commit();
    await output.writeRecords([record('A3')]); // written by another window before the refusal
    await output.restart();
    output.keys!.add('A1'); // what the new read finds again (the committed piece was the old snapshot's)
    await output.writeRecords([record('A3')]);
    const piece = await output.commit();
    expect(piece.rows).toEqual({ assessment_aspects: 1 });
    expect(readFileSync(join(dir, piece.files[0]!.path), 'utf8').trim().split('\n')).toHaveLength(1);
    expect([...output.keys!].sort()).toEqual(['A1', 'A3']);
  });

  it('writeKeyChunk keeps the ids of a piece under the name of its snapshot and the piece number', async () => {
    const path = await writeKeyChunk(sink, plan(), EARLIER, 3, new Set(['X1', 'X2']));
    expect(path).toBe(`${IDS_DIR}/assessment_aspects-${EARLIER}-part0003.json.gz`);
    expect(ids(path)).toEqual(['X1', 'X2']);
  });

  it('without a baseline: no deletions, and the ids of every piece become the next baseline', async () => {
    const chunk = await writeKeyChunk(sink, plan(), RUN, 1, new Set(['X1', 'X2']));
    await output.writeRecords([record('X3')]);
    expect([...output.keys!]).toEqual(['X3']);
    const { idsFile } = await finishSnapshot({ sink, plan: plan(), output, chunks: [chunk], detectedAt: new Date(), runId: RUN });
    expect(idsFile).toBe(`${IDS_DIR}/assessment_aspects-${RUN}.json.gz`);
    expect(ids(idsFile!).sort()).toEqual(['X1', 'X2', 'X3']);
    const piece = await output.commit();
    expect(piece.deletions).toEqual([]);
    expect(piece.rows).toEqual({ assessment_aspects: 1 });
  });

  it('ids of the baseline missing from every piece (not only the last) become deletion rows detected by snapshot', async () => {
    const baseline = `${IDS_DIR}/assessment_aspects-${EARLIER}.json.gz`;
    await writeList(baseline, ['X1', 'X2', 'X3', 'X4', 'X5']);
    // Pieces 1 and 2 were committed at checkpoints (perhaps by an earlier run); piece 3 is in memory.
    const c1 = await writeKeyChunk(sink, plan(baseline), EARLIER, 1, new Set(['X1']));
    const c2 = await writeKeyChunk(sink, plan(baseline), EARLIER, 2, new Set(['X3', 'X6']));
    await output.writeRecords([record('X5')]);
    const detectedAt = new Date('2026-01-01T00:00:07.000Z');
    const { idsFile } = await finishSnapshot({ sink, plan: plan(baseline), output, chunks: [c1, c2], detectedAt, runId: RUN });

    const piece = await output.commit();
    expect(piece.deletions).toEqual(
      ['X2', 'X4'].map((id) => ({
        school_id: 'A1001',
        type: 'assessment_aspects',
        id,
        deleted_at: '2026-01-01T00:00:07.000000Z',
        restored_at: null,
        detected_by: 'snapshot',
      })),
    );
    const delFile = piece.files.find((f) => f.table === 'deletions')!;
    expect(delFile.path).toBe(`deletions/region=uk/school_id=A1001/${RUN}-0001.ndjson`);
    const rows = readFileSync(join(dir, delFile.path), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Row);
    expect(rows).toEqual([
      expect.objectContaining({
        type: 'assessment_aspects',
        id: 'X2',
        detected_by: 'snapshot',
        table: 'assessment_aspects',
        _school_id: 'A1001',
        _run_id: RUN,
      }),
      expect.objectContaining({ id: 'X4', deleted_at: '2026-01-01T00:00:07.000000Z', deleted_at__timezone: 'UTC', restored_at: null }),
    ]);
    expect(piece.rows).toEqual({ assessment_aspects: 1, deletions: 2 });
    // The next baseline holds what this snapshot saw, new ids included.
    expect(ids(idsFile!).sort()).toEqual(['X1', 'X3', 'X5', 'X6']);
  });

  it('an unreadable id list fails with E_STATE naming it and the way out', async () => {
    const baseline = `${IDS_DIR}/assessment_aspects-${EARLIER}.json.gz`;
    await sink.writeAtomic(baseline, 'not gzip');
    await expect(
      finishSnapshot({ sink, plan: plan(baseline), output, chunks: [], detectedAt: new Date(), runId: RUN }),
    ).rejects.toMatchObject({
      code: 'E_STATE',
      message: expect.stringMatching(new RegExp(`${baseline.replace(/[.]/g, '\\.')}.*delete it`)),
    });
  });

  it('a missing baseline means no deletions (a new baseline starts)', async () => {
    await output.writeRecords([record('X1')]);
    const { idsFile } = await finishSnapshot({
      sink,
      plan: plan(`${IDS_DIR}/assessment_aspects-gone.json.gz`),
      output,
      chunks: [],
      detectedAt: new Date(),
      runId: RUN,
    });
    expect((await output.commit()).deletions).toEqual([]);
    expect(ids(idsFile!)).toEqual(['X1']);
  });

  it('a checkpoint chunk that cannot be found never turns the rows it held into deletions', async () => {
    // The rows of piece 1 were read and committed; its id list is gone (deleted by hand after the
    // "unreadable id list: delete it" advice, or lost). Reporting its ids as deleted would make a
    // loader drop rows that exist.
    const baseline = `${IDS_DIR}/assessment_aspects-${EARLIER}.json.gz`;
    await writeList(baseline, ['X1', 'X2', 'X3']);
    const lost = await writeKeyChunk(sink, plan(baseline), EARLIER, 1, new Set(['X1', 'X2']));
    await sink.remove([lost]);
    await output.writeRecords([record('X3')]);
    const outcome = await finishSnapshot({ sink, plan: plan(baseline), output, chunks: [lost], detectedAt: new Date(), runId: RUN }).then(
      () => 'finished',
      (e: { code?: string }) => e.code,
    );
    const reported = (await output.commit()).deletions.map((d) => d.id);
    expect(reported).not.toContain('X1');
    expect(reported).not.toContain('X2');
    expect(['finished', 'E_STATE']).toContain(outcome);
  });
});
