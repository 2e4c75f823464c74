import type { Sink } from '../sink/types.ts';
import { ExportError, oneLine } from '../errors.ts';
import { packParts, PART_LIMIT, partPath, runManifestPath, runManifestText, runTotals, taskEntry, type PackItem } from './layout.ts';
import type { Manifest, ManifestTask, RunManifest } from './types.ts';

/**
 * The commit protocol. A task hands over its result only after its files are durable. The
 * committer lists it in a manifest part and only then runs the task's state promotion, so a
 * watermark never advances past data that no manifest lists. Tasks that finish while a part is
 * being written are batched into the next part: writes stay proportional to the number of tasks,
 * and a batch too big for one part (PART_LIMIT) takes several.
 *
 * finish() rewrites the run's entries (committed, failed, skipped, with the errors learnt after
 * listing) into as few full parts as they need, writes the run manifest (its summary and the
 * list of those parts) last, then removes the small parts of the commit batches, which the new
 * parts repeat. Loaders apply each task once by its key, whichever part lists it, so a loader
 * that read the small parts meanwhile is not affected. Layout: src/manifest/layout.ts.
 */
export interface PendingCommit {
  task: ManifestTask;
  deletions: Manifest['deletions'];
  promote: () => Promise<void>; // writes the school's state; runs after the part is durable
}

type Header = Omit<Manifest, 'tasks' | 'deletions' | 'status' | 'finished_at'>;
type Queued = { c: PendingCommit; resolve: () => void; reject: (e: unknown) => void };

export class Committer {
  private readonly tasks: ManifestTask[] = [];
  private deletions: Manifest['deletions'] = [];
  private queue: Queued[] = [];
  private flushing: Promise<void> | undefined;
  /** Parts written so far (commit batches), by number. */
  private readonly written: number[] = [];
  private part = 0;
  private readonly limit: number;

  constructor(
    private readonly sink: Sink,
    private readonly header: Header,
    opts: { partLimit?: number } = {},
  ) {
    this.limit = opts.partLimit ?? PART_LIMIT;
  }

  /**
   * Resolves once the task is listed in a durable manifest part and its state is promoted. A
   * rejection with `listed: true` means the task is already in the manifest (with its error).
   */
  commit(c: PendingCommit): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ c, resolve, reject });
      if (!this.flushing) this.flushing = this.flushLoop();
    });
  }

  /** Failed and skipped tasks are listed in the parts written at the end; they promote nothing. */
  record(task: ManifestTask): void {
    this.tasks.push(task);
  }

  /** A committed task whose files were removed again (its school was purged meanwhile). */
  retract(task: ManifestTask, err: { code: string; message: string }): void {
    const i = this.tasks.indexOf(task);
    const retracted = taskEntry({ ...task, status: 'skipped', files: [], rows: {}, error: { code: err.code, message: err.message } });
    if (i >= 0) this.tasks[i] = retracted;
    else this.tasks.push(retracted);
    this.deletions = this.deletions.filter((d) => d.school_id !== task.school_id);
  }

  private partHeader(n: number): object {
    return { ...this.header, status: 'running', part: n, finished_at: new Date().toISOString() };
  }

  private async flushLoop(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue;
      this.queue = [];
      const listed = await this.writeBatch(batch);
      for (const [b, e] of listed) b.reject(e);
      await Promise.all(batch.filter((b) => !listed.has(b)).map((b) => this.promote(b)));
    }
    this.flushing = undefined;
  }

  /**
   * Writes a batch's parts in order. Returns, for each commit that cannot promote, why: a task
   * none of whose parts was written is listed nowhere (not listed: its files go); one whose
   * entry was written but not all its deletion records is listed (its files stay) and does not
   * advance its state either, so the next run reads it again.
   */
  private async writeBatch(batch: Queued[]): Promise<Map<Queued, unknown>> {
    const items: PackItem<Queued>[] = batch.flatMap((b) => [
      { kind: 'task' as const, value: b.c.task, owner: b },
      ...b.c.deletions.map((d) => ({ kind: 'deletion' as const, value: d, owner: b })),
    ]);
    const failed = new Map<Queued, unknown>();
    const entryListed = new Set<Queued>();
    let parts;
    try {
      parts = [...packParts((n) => this.partHeader(n), this.part + 1, items, this.limit)];
    } catch (e) {
      for (const b of batch) failed.set(b, e);
      return failed;
    }
    for (const p of parts) {
      const n = this.part + 1;
      try {
        await this.sink.writeAtomic(partPath(this.header.run_id, n), p.text);
        this.part = n;
        this.written.push(n);
        for (const o of p.taskOwners) entryListed.add(o);
      } catch (e) {
        for (const o of p.owners) if (!failed.has(o)) failed.set(o, e);
      }
    }
    for (const [b, e] of failed) {
      if (!entryListed.has(b)) continue;
      const err = new ExportError('E_SINK', `listed, but a manifest part with its deletion records failed: ${oneLine(e)}`, { cause: e });
      this.tasks.push(taskEntry({ ...b.c.task, error: { code: err.code, message: err.message } }));
      failed.set(b, Object.assign(err, { listed: true }));
    }
    return failed;
  }

  private async promote(b: Queued): Promise<void> {
    try {
      await b.c.promote();
      this.tasks.push(b.c.task);
      this.deletions.push(...b.c.deletions);
      b.resolve();
    } catch (e) {
      // Listed in a part, so its files are loadable, but its state did not advance: the
      // next run reads the same rows again, and loaders resolve the duplicates by
      // (school, id, updated_at).
      const err = new ExportError('E_STATE', `state not advanced: ${oneLine(e)}`, { cause: e });
      this.tasks.push(taskEntry({ ...b.c.task, error: { code: err.code, message: err.message } }));
      b.reject(Object.assign(err, { listed: true }));
    }
  }

  /** The whole run as it stands, in memory (for the summary; the destination holds it in parts). */
  snapshot(o: { interrupted?: boolean } = {}): Manifest {
    const failed = this.tasks.some((t) => (t.status !== 'committed' && t.status !== 'unchanged') || t.error !== undefined);
    return {
      ...this.header,
      status: o.interrupted ? 'interrupted' : failed ? 'partial' : 'ok',
      finished_at: new Date().toISOString(),
      tasks: [...this.tasks].sort((a, b) => (a.school_id + a.resource).localeCompare(b.school_id + b.resource)),
      deletions: this.deletions,
    };
  }

  /**
   * Writes the run's final parts and its run manifest, then removes the commit batches' parts.
   * Its status: interrupted when asked, partial when a task did not commit. Returns the run in
   * memory, every task listed.
   */
  async finish(o: { interrupted?: boolean } = {}): Promise<Manifest> {
    while (this.flushing) await this.flushing;
    const manifest = this.snapshot(o);
    const parts: RunManifest['parts'] = [];
    for (const p of packParts((n) => this.partHeader(n), this.part + 1, entriesOf(manifest), this.limit)) {
      const n = this.part + 1;
      const path = partPath(this.header.run_id, n);
      await this.sink.writeAtomic(path, p.text);
      this.part = n;
      parts.push({ path, part: n, tasks: p.tasks, bytes: Buffer.byteLength(p.text) });
    }
    const { version: _v, ...rest } = this.header;
    const run: RunManifest = {
      version: 2,
      layout: 'parts',
      kind: 'export',
      ...rest,
      status: manifest.status === 'running' ? 'partial' : manifest.status,
      finished_at: manifest.finished_at,
      summary: runTotals(manifest.tasks, manifest.deletions.length),
      parts,
    };
    await this.sink.writeAtomic(runManifestPath(this.header.run_id), runManifestText(run));
    // The final parts repeat every entry of the commit batches' parts: those go, so a run leaves
    // few objects. (A run killed before this point keeps them: loaders and the sweep read them.)
    if (this.written.length) await this.sink.remove(this.written.map((n) => partPath(this.header.run_id, n))).catch(() => undefined);
    return manifest;
  }
}

/** The run's entries to pack, one at a time (at 10,000 schools a run has 100,000 tasks). */
function* entriesOf(m: Manifest): Generator<PackItem<null>> {
  for (const t of m.tasks) yield { kind: 'task', value: t, owner: null };
  for (const d of m.deletions) yield { kind: 'deletion', value: d, owner: null };
}
