import type { RunEvent } from './progress.ts';

/**
 * What a run has done so far, counted from its events, the same way for the live display and for
 * the summary, so the two name and count the same things:
 * - records read: API records received in this run (a resumed read counts only what it read
 *   after its checkpoint; a read interrupted or failed still counts what it read), and
 * - rows written: table rows in committed files (child tables included), counted when a piece
 *   of a task is committed.
 */
export interface ActiveTask {
  school: string;
  resource: string;
  mode: 'full' | 'incremental';
  /** Records of this read so far, those committed by an earlier run it resumes included. */
  records: number;
  pages: number;
  /** Where this run's reading began (a resumed read's checkpoint). */
  base: number;
}

export class RunTally {
  readonly active = new Map<string, ActiveTask>();
  total = 0;
  done = 0;
  unfinished = 0;
  recordsRead = 0;
  rowsWritten = 0;
  /** Tasks started so far: done, unfinished or active. */
  started = 0;
  /** The watermark before this run of each planned task not done yet: the lag of a task that does not commit. */
  readonly previous = new Map<string, string | null>();

  observe(e: RunEvent): void {
    const key = 'resource' in e ? taskKey(e.school_id, e.resource) : '';
    switch (e.event) {
      case 'run_start':
        this.total = e.tasks;
        return;
      case 'task_start':
        this.started += 1;
        this.active.set(key, { school: e.school_id, resource: e.resource, mode: e.mode, records: 0, pages: 0, base: 0 });
        return;
      case 'resumed': {
        // rows committed before this run: not read by it
        const a = this.active.get(key);
        if (a) Object.assign(a, { records: e.rows, pages: e.pages, base: e.rows });
        return;
      }
      case 'resume_refused': {
        // reads again from page 1: what was read so far stays counted as read
        const a = this.active.get(key);
        if (a) Object.assign(a, { records: 0, pages: 0, base: 0 });
        return;
      }
      case 'task_progress':
        return this.progress(key, e.rows, e.pages);
      case 'task_committed':
        this.rowsWritten += e.rows_written;
        return;
      case 'task_done':
        this.progress(key, e.rows, 0);
        this.active.delete(key);
        // its lag is now its new watermark's: the summary reads `previous` only for tasks that did
        // not commit, and a run of 100,000 tasks would otherwise keep them all (10 MB)
        this.previous.delete(key);
        this.done += 1;
        return;
      case 'task_failed':
      case 'task_skipped':
      case 'task_interrupted':
        this.active.delete(key);
        this.unfinished += 1;
        return;
      default:
        return;
    }
  }

  private progress(key: string, records: number, pages: number): void {
    const a = this.active.get(key);
    if (!a) return;
    if (records > a.records) this.recordsRead += records - a.records;
    a.records = Math.max(a.records, records);
    if (pages) a.pages = pages;
  }
}

export const taskKey = (school: string, resource: string): string => `${school}\u0000${resource}`;
