import type { OverLimit } from '../decode/index.ts';
import type { Reporter } from './progress.ts';

/** Tables already warned about, per run (the run's context object): one warning per table per run. */
const warned = new WeakMap<object, Set<string>>();

/**
 * Says that a value too large for a documented loader was written (docs/flattening.md, "Loader limits"),
 * once per table per run: the table, the column, the size and the loader; never the value.
 */
export function warnOverLimit(run: object, reporter: Reporter, ids: { school_id: string; resource: string }, w: OverLimit): void {
  let tables = warned.get(run);
  if (!tables) warned.set(run, (tables = new Set()));
  if (tables.has(w.table)) return;
  tables.add(w.table);
  reporter.emit({
    event: 'value_over_limit',
    ...ids,
    table: w.table,
    ...(w.column !== undefined ? { column: w.column } : {}),
    bytes: w.bytes,
    loader: w.loader,
    limit_bytes: w.limit,
  });
}
