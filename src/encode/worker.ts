/**
 * An encoding worker thread: holds the page encoders of the tasks pinned to it (their drift and
 * memo live here) and turns each raw page body into encoded rows. It answers twice per page: the
 * page's meta right after JSON.parse (so the main thread can request the next page of the cursor
 * walk at once), then the encoded rows, whose buffers are transferred, not copied.
 */
import { parentPort } from 'node:worker_threads';
import { chunkBuffers } from '../format/chunk.ts';
import type { PageEncoder } from './page-encoder.ts';
import { encodeParsed, encoderFor, parsePage, toWire } from './page-work.ts';
import type { FromWorker, TaskSetup, ToWorker } from './protocol.ts';

const port = parentPort;
if (!port) throw new Error('encode/worker.ts runs as a worker thread');

const tasks = new Map<number, { encoder: PageEncoder; setup: TaskSetup }>();

const post = (m: FromWorker, transfer: ArrayBuffer[] = []) => port.postMessage(m, transfer);

port.on('message', (m: ToWorker) => {
  if (m.t === 'open') {
    tasks.set(m.task, { encoder: encoderFor(m.setup), setup: m.setup });
  } else if (m.t === 'page') {
    const task = tasks.get(m.task);
    try {
      if (!task) throw new Error(`page for unknown task ${m.task}`);
      const parsed = parsePage(m.body, m.gzip);
      post({ t: 'meta', page: m.page, meta: parsed.meta, rows: parsed.rows.length, bytes: parsed.bytes });
      const result = encodeParsed(task.encoder, parsed, task.setup.keyField);
      post(
        { t: 'done', page: m.page, result },
        result.tables.flatMap((t) => chunkBuffers(t.chunk)),
      );
    } catch (e) {
      post({ t: 'error', page: m.page, error: toWire(e) });
    }
  } else {
    const task = tasks.get(m.task);
    tasks.delete(m.task);
    const drift: [string, string[]][] = task ? [...task.encoder.drift()].map(([t, s]) => [t, [...s]]) : [];
    post({ t: 'closed', task: m.task, drift });
  }
});
