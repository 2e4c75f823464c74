/**
 * Values too large for a loader the project documents (docs/flattening.md, "Loader limits"): Snowflake
 * refuses a field over 16 MB, BigQuery a row over 100 MB (CSV and JSON loads). The exporter
 * writes them (the files stay complete) and warns, naming the table and column, never the value.
 *
 * Cost: no value can be larger than the page it came in (its JSON text holds the value, escaped at
 * least as long as its UTF-8 bytes), so a page the decoder measured under the field limit is never
 * walked; records of unknown size (streamed pages, hand-made rows) are.
 */
import { pageMarks } from './page-marks.ts';
import type { SurrogateScope } from './well-formed.ts';

export const LOADER_LIMITS = {
  /** Snowflake: largest VARCHAR / VARIANT value (16 MB) */
  field: { loader: 'Snowflake', what: 'field', bytes: 16 * 1024 * 1024 },
  /** BigQuery: largest row of a CSV or JSON load (100 MB) */
  row: { loader: 'BigQuery', what: 'row', bytes: 100 * 1024 * 1024 },
} as const;

export interface OverLimit {
  table: string;
  /** the column holding the value; absent when the row as a whole is over the row limit */
  column?: string;
  bytes: number;
  loader: string;
  limit: number;
}

type Sized = { bytes: number };

/** Bytes a value takes as a column (strings: UTF-8; JSON text: its length; numbers, booleans: a few). */
function leafBytes(v: unknown): number {
  if (typeof v === 'string') return Buffer.byteLength(v);
  if (v === null || typeof v !== 'object') return 8;
  return Buffer.byteLength(JSON.stringify(v));
}

/**
 * Appends to `out` every value (and row) of these records over a loader limit, with the table and
 * column it is written in. `limits` lowers the limits (tests).
 */
export function valuesOverLimits(
  records: readonly unknown[],
  scope: SurrogateScope,
  out: OverLimit[],
  limits: { field: number; row: number } = { field: LOADER_LIMITS.field.bytes, row: LOADER_LIMITS.row.bytes },
): void {
  const bytes = pageMarks(records)?.bytes;
  if (bytes !== undefined && bytes <= limits.field) return;
  const field = (table: string, column: string, n: number) => {
    if (n > limits.field) out.push({ table, column, bytes: n, loader: LOADER_LIMITS.field.loader, limit: limits.field });
  };
  const row = (table: string, size: Sized) => {
    if (size.bytes > limits.row) out.push({ table, bytes: size.bytes, loader: LOADER_LIMITS.row.loader, limit: limits.row });
  };
  // a nested object's leaves are columns of their own (`a__b`); arrays and declared JSON fields are one column
  const walk = (v: unknown, column: string, table: string, size: Sized, whole: boolean) => {
    if (whole || typeof v !== 'object' || v === null || Array.isArray(v)) {
      const n = leafBytes(v);
      size.bytes += n;
      field(table, column, n);
      return;
    }
    for (const k in v as Record<string, unknown>) walk((v as Record<string, unknown>)[k], `${column}__${k}`, table, size, false);
  };
  for (const r of records) {
    if (typeof r !== 'object' || r === null || Array.isArray(r)) continue;
    const size: Sized = { bytes: 0 };
    for (const k in r as Record<string, unknown>) {
      const v = (r as Record<string, unknown>)[k];
      const child = scope.includes.get(k);
      if (child === undefined) {
        walk(v, k, scope.table, size, scope.json?.has(k) === true);
        continue;
      }
      const items = Array.isArray(v) ? v : Array.isArray((v as { data?: unknown } | null)?.data) ? (v as { data: unknown[] }).data : [];
      for (const item of items) {
        const childSize: Sized = { bytes: 0 };
        if (typeof item === 'object' && item !== null && !Array.isArray(item))
          for (const ck in item as Record<string, unknown>) walk((item as Record<string, unknown>)[ck], ck, child, childSize, false);
        row(child, childSize);
      }
    }
    row(scope.table, size);
  }
}
