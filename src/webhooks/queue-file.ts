import { ExportError, oneLine } from '../errors.ts';
import { isSafeId } from '../ids.ts';
import type { Sink } from '../sink/types.ts';

/**
 * The receiver's run queue as it is kept in the destination, `_state/_webhooks/queue.json`:
 * written whole and atomically after every change, so a receiver that restarts (or a second look
 * with `school-export status`) finds the schools still waiting and the run that was going.
 * One receiver per destination writes it.
 */
export const QUEUE_PATH = '_state/_webhooks/queue.json';

export interface QueuedSchool {
  school_id: string;
  /** When the approval that put it here arrived (ISO 8601 UTC). */
  queued_at: string;
  /** Runs started for it that did not export it (a retry waits for backoff). */
  attempts: number;
  /** A retry waits until then (ISO 8601 UTC); absent: as soon as a run can start. */
  not_before?: string;
  /** Why its last run did not export it. */
  last_error?: string;
}

export interface QueuedRun {
  /** `I/N`: the shard of the destination this run holds (one run per shard; 0/1: the whole destination). */
  shard: string;
  schools: string[];
  started_at: string;
  /** The child process, when the run is one (not in tests that run it in-process). */
  pid?: number;
  host: string;
}

export interface QueueFile {
  version: 1;
  updated_at: string;
  /** The receiver that writes this file. */
  receiver: { host: string; pid: number; started_at: string };
  /** Schools waiting for a run, in the order they will be taken. */
  waiting: QueuedSchool[];
  /** Runs going when the file was written (at most one per shard). */
  running: QueuedRun[];
}

export async function writeQueueFile(sink: Sink, q: QueueFile): Promise<void> {
  await sink.writeAtomic(QUEUE_PATH, JSON.stringify(q, null, 1) + '\n');
}

/**
 * Saves the whole queue atomically. Changes made while a write is going share the next one, so a
 * burst of approvals costs a few writes, not one each; every caller resolves once a write that
 * began after its change is done. A failed write is logged (the approvals are full-refresh
 * directives already: the nightly run still exports them) and never throws.
 */
export class QueueSaver {
  private chain: Promise<void> = Promise.resolve();
  private next: Promise<void> | undefined;

  constructor(
    private readonly sink: Sink,
    private readonly snapshot: () => QueueFile,
    private readonly log: (e: { event: string } & Record<string, unknown>) => void,
  ) {}

  save(): Promise<void> {
    if (this.next) return this.next; // not begun yet: it will hold this change too
    const p = this.chain.then(async () => {
      this.next = undefined;
      try {
        await writeQueueFile(this.sink, this.snapshot());
      } catch (e) {
        this.log({ event: 'queue_write_failed', level: 'error', error: oneLine(e) });
      }
    });
    this.next = p;
    this.chain = p;
    return p;
  }
}

/**
 * The receiver's queue at `sink`, or undefined when no receiver with `--run` ever wrote one. A
 * file that is not a queue is an error naming it (the receiver then starts with an empty queue
 * only if the operator deletes it: approvals are never dropped silently).
 */
export async function readWebhookQueue(sink: Sink): Promise<QueueFile | undefined> {
  const buf = await sink.read(QUEUE_PATH);
  if (!buf) return undefined;
  let q: QueueFile;
  try {
    q = JSON.parse(buf.toString('utf8')) as QueueFile;
  } catch (e) {
    throw unreadable(sink, (e as Error).message);
  }
  if (!q || q.version !== 1 || !Array.isArray(q.waiting) || !Array.isArray(q.running)) throw unreadable(sink, 'not a version 1 queue');
  // school ids become command-line arguments and paths: only the API's id form is taken back
  const bad = [...q.waiting.map((w) => w?.school_id), ...q.running.flatMap((r) => r?.schools ?? [])].find((id) => !isSafeId(id));
  if (bad !== undefined) throw unreadable(sink, `unsafe school id ${JSON.stringify(String(bad)).slice(0, 40)}`);
  return q;
}

function unreadable(sink: Sink, why: string): ExportError {
  return new ExportError(
    'E_STATE',
    `${QUEUE_PATH} at ${sink.url} is unreadable (${why}): delete it (the approvals it held are still full-refresh directives: the next nightly run exports them)`,
  );
}

/** `status` on a terminal: a few lines (ids listed up to `show`). */
export function renderWebhookQueue(q: QueueFile, show = 10): string {
  const ids = (list: string[]) => list.slice(0, show).join(', ') + (list.length > show ? `, … (${list.length - show} more)` : '');
  const lines = [`WEBHOOK QUEUE (receiver pid ${q.receiver.pid} on ${q.receiver.host}, updated ${q.updated_at})`];
  for (const r of q.running) {
    const who = r.pid !== undefined ? `pid ${r.pid} on ${r.host}` : `on ${r.host}`;
    lines.push(`  running since ${r.started_at} (${who}, shard ${r.shard}): ${r.schools.length} schools: ${ids(r.schools)}`);
  }
  if (q.running.length === 0) lines.push('  no run going');
  const retrying = q.waiting.filter((w) => w.attempts > 0).length;
  lines.push(
    q.waiting.length === 0
      ? '  no school waiting'
      : `  ${q.waiting.length} schools waiting${retrying ? ` (${retrying} to retry)` : ''}: ${ids(q.waiting.map((w) => w.school_id))}`,
  );
  return lines.join('\n') + '\n';
}
