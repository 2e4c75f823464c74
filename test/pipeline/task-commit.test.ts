import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { LocalSink } from '../../src/sink/local.ts';
import { Committer } from '../../src/manifest/committer.ts';
import { directivePath, readState, statePath, writeState } from '../../src/manifest/state-store.ts';
import { checkpointResource, promoteResource } from '../../src/manifest/state.ts';
import type { ManifestTask, ResourceState, SchoolDirective } from '../../src/manifest/types.ts';
import { admitPiece, commitPiece } from '../../src/pipeline/task-commit.ts';
import type { PieceCommit } from '../../src/pipeline/task.ts';
import type { SchoolRef } from '../../src/pipeline/task-output.ts';

const RUN = '20260102T000000.000Z-bbbb';
const school: SchoolRef = { id: 'A1001', region: 'uk', domain: 'api.sandbox.test', record: {} };
const IDS = '_state/ids/region=uk/school_id=A1001';

function allFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    if (!existsSync(d)) return;
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(d, e.name));
      else out.push(relative(dir, join(d, e.name)).split('\\').join('/'));
    }
  };
  walk(dir);
  return out.sort();
}

const directive = (o: { purge?: boolean } = {}): SchoolDirective => ({
  version: 1,
  school_id: 'A1001',
  force_full_seq: 0,
  deactivated: {
    reason: 'Revoked by the school',
    at: '2026-01-02T00:00:01.000Z',
    event: 'accessRevoked',
    ...(o.purge ? { purge: true } : {}),
  },
  updated_at: '2026-01-02T00:00:01.000Z',
});

describe('commitPiece', () => {
  let dir: string;
  let sink: LocalSink;
  let committer: Committer;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'task-commit-'));
    sink = new LocalSink(dir);
    committer = new Committer(sink, { version: 1, run_id: RUN, started_at: '2026-01-02T00:00:00.000Z', format: 'ndjson' });
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** The files a task made durable, and the piece that hands them over. */
  async function durablePiece(o: { seq?: number; final?: boolean; obsolete?: string[] } = {}): Promise<PieceCommit> {
    const seq = o.seq ?? 1;
    const paths = [
      `assessment_results/region=uk/school_id=A1001/${RUN}-000${seq}.ndjson`,
      `deletions/region=uk/school_id=A1001/${RUN}-000${seq}.ndjson`,
    ];
    for (const p of paths) await sink.writeAtomic(p, '{"id":"x"}\n');
    const task: ManifestTask = {
      school_id: 'A1001',
      region: 'uk',
      resource: 'assessment_results',
      status: 'committed',
      mode: 'full',
      files: paths.map((path) => ({ table: path.split('/')[0]!, path, rows: 1, bytes: 11, sha256: 'x' })),
      rows: { assessment_results: 1, deletions: 1 },
      checkpoint: { snapshot: RUN, seq, final: o.final ?? false },
    };
    const cp: NonNullable<ResourceState['checkpoint']> = {
      snapshot: RUN,
      seq,
      walks: [{ next: `/v1.0/schools/A1001/assessment/results?cursor=c1.x${seq}` }],
      pages: seq * 4,
      rows: seq * 4,
      started_at: '2026-01-02T00:00:00.000Z',
      ids_files: [`${IDS}/assessment_results-${RUN}-part000${seq}.json.gz`],
    };
    await sink.writeAtomic(cp.ids_files![0]!, 'ids');
    return {
      task,
      deletions: [
        { school_id: 'A1001', type: 'assessment_results', id: 'gone', deleted_at: null, restored_at: null, detected_by: 'snapshot' },
      ],
      state: (prev) =>
        o.final
          ? promoteResource(prev, {
              runId: RUN,
              mode: 'full',
              taskStart: new Date(cp.started_at),
              watermark: cp.started_at,
              scopeMasked: [],
            })
          : checkpointResource(prev, cp),
      obsolete: o.obsolete ?? [],
    };
  }

  /** Writes the directive while the state is being written: after the piece was listed, before the second check. */
  function revokeDuringStateWrite(piece: PieceCommit, purge: boolean): PieceCommit {
    return {
      ...piece,
      state: (prev) => {
        const p = join(dir, ...directivePath('A1001').split('/'));
        mkdirSync(dirname(p), { recursive: true });
        writeFileSync(p, JSON.stringify(directive({ purge })));
        return piece.state(prev);
      },
    };
  }

  const o = () => ({ sink, committer, school, resource: 'assessment_results' });

  it('lists the piece in a manifest part, then advances the state and removes what the state no longer references', async () => {
    await sink.writeAtomic(`${IDS}/assessment_results-old.json.gz`, 'old baseline');
    const piece = await durablePiece({ final: true, obsolete: [`${IDS}/assessment_results-old.json.gz`] });
    await commitPiece(o(), piece);
    const files = allFiles(dir);
    expect(files).toEqual(expect.arrayContaining([...piece.task.files.map((f) => f.path), `_manifests/${RUN}/part-00001.json`]));
    expect(files).not.toContain(`${IDS}/assessment_results-old.json.gz`);
    const st = await readState(sink, 'uk', 'A1001');
    expect(st.resources.assessment_results).toMatchObject({ watermark: '2026-01-02T00:00:00.000Z', last_run_id: RUN });
    expect(committer.snapshot().tasks).toEqual([piece.task]);
  });

  it('admitPiece lets a piece through while the school is active, and refuses it (E_PURGED) once access was revoked', async () => {
    await admitPiece(o());
    // Revoked without a purge: the piece is refused; what the school committed before stays.
    const earlier = await durablePiece({ seq: 1 });
    await commitPiece(o(), earlier);
    const before = allFiles(dir);
    await sink.writeAtomic(directivePath('A1001'), JSON.stringify(directive()));
    const err = await admitPiece(o()).catch((e: unknown) => e);
    expect(err).toMatchObject({
      code: 'E_PURGED',
      school: 'A1001',
      resource: 'assessment_results',
      message: expect.stringMatching(/school A1001: access accessRevoked .*this task was not committed/),
    });
    expect(allFiles(dir)).toEqual([...before, directivePath('A1001')].sort());
    expect(committer.snapshot().tasks).toEqual([earlier.task]);
    // With a purge the message says so (the receiver removes what the school had).
    await sink.writeAtomic(directivePath('A1001'), JSON.stringify(directive({ purge: true })));
    await expect(admitPiece(o())).rejects.toMatchObject({ code: 'E_PURGED', message: expect.stringContaining('its data was purged') });
  });

  it('revoked while the state is written, without a purge: the piece is kept (committed before the revocation)', async () => {
    const piece = revokeDuringStateWrite(await durablePiece({ seq: 1 }), false);
    await commitPiece(o(), piece);
    for (const f of piece.task.files) expect(existsSync(join(dir, f.path))).toBe(true);
    expect((await readState(sink, 'uk', 'A1001')).resources.assessment_results?.checkpoint?.seq).toBe(1);
    expect(committer.snapshot().tasks[0]!.status).toBe('committed');
  });

  it('purged while the state is written: files, state and id lists go, the task is retracted, E_PURGED', async () => {
    await commitPiece(o(), await durablePiece({ seq: 1 }));
    await writeState(sink, { version: 1, school_id: 'A1002', region: 'uk', resources: {} });
    const piece = revokeDuringStateWrite(await durablePiece({ seq: 2, final: true }), true);
    const err = await commitPiece(o(), piece).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'E_PURGED', school: 'A1001', message: expect.stringContaining('its data was purged') });

    for (const f of piece.task.files) expect(existsSync(join(dir, f.path))).toBe(false);
    const left = allFiles(dir);
    expect(left.filter((f) => f.startsWith(IDS))).toEqual([]);
    expect(left).not.toContain(statePath('uk', 'A1001'));
    expect(left).toContain(statePath('uk', 'A1002'));
    expect(left).toContain(directivePath('A1001')); // the receiver's record stays

    const m = committer.snapshot();
    expect(m.status).toBe('partial');
    const retracted = m.tasks.find((t) => t.checkpoint?.seq === 2)!;
    expect(retracted).toMatchObject({ status: 'skipped', files: [], rows: {}, error: { code: 'E_PURGED' } });
    expect(m.deletions).toEqual([]);
  });
});
