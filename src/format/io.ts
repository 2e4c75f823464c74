import { finished } from 'node:stream/promises';
import type { Writable } from 'node:stream';
import { ExportError } from '../errors.ts';
import { EXTRA_COLUMN, type Row, type Scalar, type TableSchema } from '../table.ts';

/**
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

export function sinkError(what: string, cause: unknown): ExportError {
  return new ExportError('E_SINK', `${what}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
}

/** The columns a writer emits from the schema (without `_extra`) and a test for undeclared keys. */
export function declaredColumns(schema: TableSchema): { columns: TableSchema['columns']; isDeclared: Set<string> } {
  const columns = schema.columns.filter((c) => c.name !== EXTRA_COLUMN.name);
  return { columns, isDeclared: new Set(schema.columns.map((c) => c.name)) };
}

type WellFormed = string & { isWellFormed(): boolean; toWellFormed(): string };

/** JSON text of a row's undeclared fields, or null when it has none (the `_extra` column). */
export function extraJson(row: Row, isDeclared: Set<string>): string | null {
  let extra: Record<string, Scalar> | null = null;
  for (const k in row) {
    if (isDeclared.has(k)) continue;
    const v = row[k];
    // A lone UTF-16 surrogate would become a "\ud83e" escape that JSON readers (DuckDB,
    // BigQuery) reject, failing the whole load: replace it with U+FFFD, as UTF-8 encoding does
    // for the typed columns.
    (extra ??= {})[k] = typeof v === 'string' && !(v as WellFormed).isWellFormed() ? (v as WellFormed).toWellFormed() : v;
  }
  return extra === null ? null : JSON.stringify(extra);
}
