/**
 * Tightening leaves nothing behind (issue 22). When a destination's personal-data policy becomes
 * stricter (or its key changes), every resource of every school is read again in full under the
 * new policy; the files written before still hold what the new policy would not write. This
 * module deletes them once they are replaced, and says so where loaders look:
 *
 *   1. watch(): when a resource's full read under the new policy commits its last piece, the same
 *      state write records `purge_before: <the read's snapshot run>` for that resource, so the
 *      duty survives a crash between the commit and the purge;
 *   2. finish(), at the end of the run: a school whose every resource was read again under the
 *      current policy has its files of runs before the earliest of those reads listed, a purge
 *      manifest written (`purged[]` with `before_run`, like a revocation's purge, so DuckDB,
 *      BigQuery and Snowflake loads drop the school's rows staged from those runs, `_raw_*`
 *      included, and skip their tasks), then the files and superseded id lists are deleted, the
 *      deletion records of those runs' manifests are redacted, and the marks cleared.
 *
 * A school with a resource not read again yet (failed, or left out by --resources) waits: its
 * marks stay, `status` counts it, and a later run that commits the missing read purges it.
 */
import pLimit from 'p-limit';
import { redactDeletions as redactManifestDeletions } from '../manifest/layout.ts';
import { newRunId } from '../manifest/run-id.ts';
import { readState, updateState } from '../manifest/state-store.ts';
import type { Manifest, ManifestTask, ResourceState, SchoolState } from '../manifest/types.ts';
import type { TableSchema } from '../table.ts';
import { comparePolicies, tightens } from './compare.ts';
import { earlierPolicy, type DestinationRecord } from './destination.ts';

/** The destination as state-store takes it (a Sink), named through manifest/ to keep privacy off sink/. */
export type StateSink = Parameters<typeof updateState>[0];

/** A piece of a task on its way to the committer (pipeline's PieceCommit, by shape). */
export interface CommittingPiece {
  task: ManifestTask;
  state: (prev: ResourceState | undefined) => ResourceState;
}

export interface TighteningOptions {
  sink: StateSink;
  /** The destination's record as the run started (its policy and the earlier ones). */
  record: DestinationRecord;
  runId: string;
  shard: { index: number; count: number };
  /** Every table the configuration knows: a school's files are in one folder per table. */
  tables: readonly TableSchema[];
  /** Every resource the configuration knows: a school is purged once each of these it holds was read again. */
  resources: readonly string[];
}

export interface SchoolPurge {
  school_id: string;
  region: string;
  before_run: string;
  files_removed: number;
}

export interface TighteningOutcome {
  purged: SchoolPurge[];
  /** Purge manifests written (`_manifests/<id>.json`). */
  manifests: string[];
  /** Schools still holding files of a weaker policy: some resource was not read again yet. */
  waiting: string[];
  /** What could not be done (the next run tries again): the run must not end as if it had. */
  problems: string[];
}

export const TIGHTENING_REASON =
  'written under a weaker personal-data policy (or another key), replaced by a full read under the current one';
/** Schools per purge manifest: a manifest object stays well under 1 MB. */
const PER_MANIFEST = 2000;
const RUN_ID_IN_NAME = /(\d{8}T\d{6}\.\d{3}Z-[0-9a-z-]+?)(?:-part\d+)?\.json\.gz$/;

export class Tightening {
  /** Schools (id -> region) whose state holds a mark after a commit of this run. */
  private readonly marked = new Map<string, string>();
  private readonly verdicts = new Map<string, boolean>();

  constructor(private readonly o: TighteningOptions) {}

  /** The piece with its state promotion recording (or carrying) the resource's purge duty. */
  watch<P extends CommittingPiece>(school: { id: string; region: string }, piece: P): P {
    const final = piece.task.status === 'committed' && (piece.task.checkpoint?.final ?? true);
    return {
      ...piece,
      state: (prev: ResourceState | undefined) => {
        const next = piece.state(prev);
        let mark = prev?.purge_before;
        const [before, after] = [prev?.personal_data ?? 'keep', next.personal_data ?? 'keep'];
        // only over a committed read (last_run_id): a resource's first read, even one committed in
        // checkpoint pieces, replaces nothing
        if (final && prev?.last_run_id && piece.task.mode === 'full' && before !== after && this.needsPurge(before)) {
          mark = piece.task.checkpoint?.snapshot ?? this.o.runId;
        }
        if (mark) {
          next.purge_before = mark;
          this.marked.set(school.id, school.region);
        }
        return next;
      },
    };
  }

  /** Rows written under `fingerprint` hold values the current policy would not write (unknown: assume so). */
  private needsPurge(fingerprint: string): boolean {
    let v = this.verdicts.get(fingerprint);
    if (v === undefined) {
      const old = earlierPolicy(this.o.record, fingerprint);
      v = !old || tightens(comparePolicies(old, this.o.record.personal_data, this.o.tables));
      this.verdicts.set(fingerprint, v);
    }
    return v;
  }

  /** At the end of the run (not after an interrupt): purges the schools whose every resource was replaced. */
  async finish(now: Date): Promise<TighteningOutcome> {
    const out: TighteningOutcome = { purged: [], manifests: [], waiting: [], problems: [] };
    if (this.marked.size === 0) return out;
    const limit = pLimit(16);
    const ready = (
      await Promise.all(
        [...this.marked].map(([id, region]) =>
          limit(async () => {
            try {
              return this.readyToPurge(await readState(this.o.sink, region, id), out);
            } catch (e) {
              out.problems.push(`school ${id}: ${(e as Error).message}`);
              return undefined;
            }
          }),
        ),
      )
    ).filter((x): x is Ready => x !== undefined);
    const done: (Ready & { files: string[] })[] = [];
    for (let i = 0; i < ready.length; i += PER_MANIFEST) done.push(...(await this.purgeBatch(ready.slice(i, i + PER_MANIFEST), now, out)));
    if (done.length) {
      // one pass over the manifests for every school purged, then the marks go: a crash before
      // this leaves the marks, and the next run purges (and redacts) again
      out.problems.push(...(await redactDeletions(this.o.sink, new Map(done.map((s) => [s.state.school_id, s.before])))));
      await Promise.all(
        done.map((s) =>
          limit(() =>
            updateState(this.o.sink, s.state.region, s.state.school_id, (st) => {
              // every mark is met: the files before the earliest re-read are gone, later ones are the current policy's
              for (const r of Object.values(st.resources)) delete r.purge_before;
            }),
          ),
        ),
      );
    }
    out.waiting.sort();
    return out;
  }

  private readyToPurge(state: SchoolState, out: TighteningOutcome): Ready | undefined {
    const marks = Object.values(state.resources)
      .map((r) => r.purge_before)
      .filter((m): m is string => m !== undefined);
    if (marks.length === 0) return undefined;
    const current = this.o.record.fingerprint;
    const stale = Object.entries(state.resources).filter(
      ([name, r]) => this.o.resources.includes(name) && (r.personal_data ?? 'keep') !== current,
    );
    if (stale.length) {
      out.waiting.push(state.school_id);
      return undefined;
    }
    return { state, before: marks.sort()[0]! };
  }

  /** Lists, records (a purge manifest) and deletes the files of a batch of schools; returns the schools done. */
  private async purgeBatch(batch: Ready[], now: Date, out: TighteningOutcome): Promise<(Ready & { files: string[] })[]> {
    const { sink } = this.o;
    const limit = pLimit(16);
    const listed = await Promise.all(
      batch.map((r) =>
        limit(async () => {
          try {
            return { ...r, files: await this.filesBefore(r) };
          } catch (e) {
            out.problems.push(`school ${r.state.school_id}: listing its files failed (${(e as Error).message})`);
            return undefined;
          }
        }),
      ),
    );
    const schools = listed.filter((x): x is Ready & { files: string[] } => x !== undefined);
    if (schools.length === 0) return [];
    const runId = newRunId(now, this.o.shard, 'purge');
    const purged: SchoolPurge[] = schools.map((s) => ({
      school_id: s.state.school_id,
      region: s.state.region,
      before_run: s.before,
      files_removed: s.files.length,
    }));
    const manifest: Manifest = {
      version: 1,
      run_id: runId,
      started_at: now.toISOString(),
      finished_at: new Date().toISOString(),
      // required by the shape; a purge writes no data file
      format: this.o.record.format,
      status: 'ok',
      personal_data: this.o.record.personal_data,
      tasks: [],
      deletions: [],
      purged: purged.map((p) => ({ ...p, reason: TIGHTENING_REASON })),
    };
    const path = `_manifests/${runId}.json`;
    try {
      // the purge is recorded before anything goes: a loader never looks for a file it cannot find
      await sink.writeAtomic(path, JSON.stringify(manifest) + '\n');
    } catch (e) {
      out.problems.push(`the purge manifest ${path} could not be written (${(e as Error).message}); nothing was deleted`);
      return [];
    }
    out.manifests.push(path);
    const all = schools.flatMap((s) => s.files);
    for (let i = 0; i < all.length; i += 1000) await sink.remove(all.slice(i, i + 1000));
    out.purged.push(...purged);
    return schools;
  }

  /** The school's data files of runs before `before`, and id lists of those runs no state names. */
  private async filesBefore(r: Ready): Promise<string[]> {
    const { sink } = this.o;
    const { school_id: id, region } = r.state;
    const out: string[] = [];
    for (const t of this.o.tables) {
      for (const p of await sink.list(`${t.name}/region=${region}/school_id=${id}/`)) {
        const run = runIdOfDataFile(p);
        if (run !== undefined && run < r.before) out.push(p);
      }
    }
    const referenced = new Set(
      Object.values(r.state.resources).flatMap((x) => [
        ...(x.known_ids_file ? [x.known_ids_file] : []),
        ...(x.checkpoint?.ids_files ?? []),
      ]),
    );
    for (const p of await sink.list(`_state/ids/region=${region}/school_id=${id}/`)) {
      const run = RUN_ID_IN_NAME.exec(p)?.[1];
      if (run !== undefined && run < r.before && !referenced.has(p)) out.push(p);
    }
    return out;
  }
}

interface Ready {
  state: SchoolState;
  before: string;
}

/** `<table>/region=<r>/school_id=<id>/<run_id>-<seq>.<ext>` -> run_id. */
export function runIdOfDataFile(path: string): string | undefined {
  const name = path.slice(path.lastIndexOf('/') + 1);
  return /^(.+)-\d{4,}\.[a-z]+(?:\.gz)?$/.exec(name)?.[1];
}

/**
 * Manifests of runs before a school's purge list its deletion records with the ids as that
 * policy wrote them (real ids where they are now pseudonymised): those records go, the rest of
 * each manifest stays (its tasks name files, not people; loaders skip them after the purge).
 */
async function redactDeletions(sink: StateSink, before: ReadonlyMap<string, string>): Promise<string[]> {
  // only runs before the latest purge can list what it removes (the run id is in the path)
  const last = [...before.values()].sort().pop() ?? '';
  const { unreadable } = await redactManifestDeletions(sink, (run, d) => before.has(d.school_id) && run < before.get(d.school_id)!, {
    docs: (doc) => doc.runId < last,
  });
  return unreadable.map((p) => `${p} is not JSON: its deletion records could not be checked for ids written under the weaker policy`);
}
