import { EXTRA_COLUMN, type Row, type Scalar, type TableSchema } from '../table.ts';

/**
 * The `_extra` column: where CSV and Parquet put a row's undeclared (drift) fields, as one JSON
 * object. NDJSON needs no folding (drift fields are its own keys).
 */

/** The columns a writer emits from the schema (without `_extra`) and a test for undeclared keys. */
export function declaredColumns(schema: TableSchema): { columns: TableSchema['columns']; isDeclared: Set<string> } {
  const columns = schema.columns.filter((c) => c.name !== EXTRA_COLUMN.name);
  return { columns, isDeclared: new Set(schema.columns.map((c) => c.name)) };
}

type WellFormed = string & { isWellFormed(): boolean; toWellFormed(): string };

/**
 * A lone UTF-16 surrogate would become a "\ud83e" escape that JSON readers (DuckDB, BigQuery)
 * reject, failing the whole load: replace it with U+FFFD, as UTF-8 encoding does for the typed columns.
 * Records are already cleaned (and counted) where they are parsed (decode/well-formed.ts); this is
 * the writers' own guard for rows that did not come from there.
 */
export function wellFormed(v: Scalar): Scalar {
  return typeof v === 'string' && !(v as WellFormed).isWellFormed() ? (v as WellFormed).toWellFormed() : v;
}

/** JSON text of a row's undeclared fields, or null when it has none (the `_extra` column). */
export function extraJson(row: Row, isDeclared: Set<string>): string | null {
  let extra: Record<string, Scalar> | null = null;
  for (const k in row) {
    if (isDeclared.has(k)) continue;
    (extra ??= {})[k] = wellFormed(row[k]);
  }
  return extra === null ? null : JSON.stringify(extra);
}
