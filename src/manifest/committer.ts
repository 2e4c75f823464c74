import type { Sink } from '../sink/types.ts';
import { ExportError, oneLine } from '../errors.ts';
import type { Manifest, ManifestTask } from './types.ts';

/**
 * The commit protocol. A task hands over its result only after its files are durable. The
 * committer lists it in a manifest part and only then runs the task's state promotion, so a
 * watermark never advances past data that no manifest lists. Tasks that finish while a part is
 * being written are batched into the next part: writes stay proportional to the number of tasks.
 * finish() writes the whole-run manifest last.
 */
export interface PendingCommit {
  task: ManifestTask;
  deletions: Manifest['deletions'];
  promote: () => Promise<void>; // writes the school's state; runs after the part is durable
}

export class Committer {
  private readonly tasks: ManifestTask[] = [];
  private deletions: Manifest['deletions'] = [];
  private queue: { c: PendingCommit; resolve: () => void; reject: (e: unknown) => void }[] = [];
  private flushing: Promise<void> | undefined;
  private part = 0;

  constructor(
    private readonly sink: Sink,
    private readonly header: Omit<Manifest, 'tasks' | 'deletions' | 'status' | 'finished_at'>,
  ) {}

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

  /** Failed and skipped tasks are listed in the final manifest only; they promote nothing. */
  record(task: ManifestTask): void {
    this.tasks.push(task);
  }

  /** A committed task whose files were removed again (its school was purged meanwhile). */
  retract(task: ManifestTask, err: { code: string; message: string }): void {
    const i = this.tasks.indexOf(task);
    const retracted: ManifestTask = { ...task, status: 'skipped', files: [], rows: {}, error: { code: err.code, message: err.message } };
    if (i >= 0) this.tasks[i] = retracted;
    else this.tasks.push(retracted);
    this.deletions = this.deletions.filter((d) => d.school_id !== task.school_id);
  }

  private async flushLoop(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue;
      this.queue = [];
      try {
        this.part += 1;
        const part: Manifest = {
          ...this.header,
          status: 'running',
          part: this.part,
          finished_at: new Date().toISOString(),
          tasks: batch.map((b) => b.c.task),
          deletions: batch.flatMap((b) => b.c.deletions),
        };
        const seq = String(this.part).padStart(5, '0');
        await this.sink.writeAtomic(`_manifests/${this.header.run_id}/part-${seq}.json`, JSON.stringify(part) + '\n');
      } catch (e) {
        for (const b of batch) b.reject(e);
        continue;
      }
      await Promise.all(
        batch.map(async (b) => {
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
            this.tasks.push({ ...b.c.task, error: { code: err.code, message: err.message } });
            b.reject(Object.assign(err, { listed: true }));
          }
        }),
      );
    }
    this.flushing = undefined;
  }

  /** The whole-run manifest as it stands, without writing it (when the destination refuses the write). */
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

  /** Writes the whole-run manifest. Its status: interrupted when asked, partial when a task did not commit. */
  async finish(o: { interrupted?: boolean } = {}): Promise<Manifest> {
    while (this.flushing) await this.flushing;
    const manifest = this.snapshot(o);
    // One line, like the parts: warehouses read manifests as newline-delimited JSON (BigQuery).
    await this.sink.writeAtomic(`_manifests/${this.header.run_id}.json`, JSON.stringify(manifest) + '\n');
    // The whole-run manifest now lists every task the parts did: drop the parts so manifests do
    // not grow twice as fast as runs. (Loaders apply each task once by its key, whichever
    // document lists it.)
    if (this.part > 0) {
      const parts = Array.from(
        { length: this.part },
        (_, i) => `_manifests/${this.header.run_id}/part-${String(i + 1).padStart(5, '0')}.json`,
      );
      await this.sink.remove(parts).catch(() => undefined);
    }
    return manifest;
  }
}
