import { finished } from 'node:stream/promises';
import type { Writable } from 'node:stream';
import { ExportError } from '../errors.ts';

/**
 * Writing to the sink's stream with backpressure: every format writer hands its bytes over here.
 * Write and wait for 'drain' when the stream asks for it. A destination that failed or closed
 * rejects (now or while waiting) instead of leaving the caller waiting for a 'drain' that never comes.
 */
export async function writeChunk(out: Writable, chunk: string | Buffer): Promise<void> {
  if (out.errored) throw out.errored;
  if (out.destroyed || out.writableEnded) throw new ExportError('E_SINK', 'the destination closed before the file was complete');
  if (out.write(chunk)) return;
  await new Promise<void>((resolve, reject) => {
    const done = (err?: Error | null) => {
      out.off('drain', onDrain);
      out.off('error', done);
      out.off('close', onClose);
      if (err) reject(err);
      else resolve();
    };
    const onDrain = () => done();
    const onClose = () => done(out.errored ?? new ExportError('E_SINK', 'the destination closed before the file was complete'));
    out.on('drain', onDrain);
    out.on('error', done);
    out.on('close', onClose);
  });
}

/** End the stream and wait until everything written has been flushed. */
export async function endStream(out: Writable): Promise<void> {
  out.end();
  await finished(out);
}
