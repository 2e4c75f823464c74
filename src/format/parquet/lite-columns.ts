import type { ParquetWriter } from 'parquetjs-lite';

/**
 * Columnar row-group buffer for parquetjs-lite. The library's appendRow() shreds every row
 * through a generic nested-record algorithm (a Set and four arrays per column per row), which
 * made it ~25x slower than JSON.parse. Our tables are flat and all columns OPTIONAL, so shredding
 * is just "definition level 1 and the value, or 0". We fill the library's own row buffer layout
 * (lib/shred.js: columnData[path] = {dlevels, rlevels, values, distinct_values, count}) and let
 * the library encode it: the last row of each group goes through appendRow() with rowGroupSize
 * set to the group's size, which makes the library encode the pages and write the row group.
 * Tied to parquetjs-lite 0.8.x internals; test/format/parquet.test.ts reads the result in DuckDB.
 */
export interface ColumnBuffer {
  name: string;
  dlevels: number[];
  values: unknown[];
  /** Values seen, for min/max statistics; null when the column has no statistics. */
  distinct: Set<unknown> | null;
}

interface LibRowBuffer {
  rowCount: number;
  pageRowCount: number;
  columnData: Record<string, { dlevels: number[]; rlevels: number[]; values: unknown[]; distinct_values: Set<unknown>; count: number }>;
  pages: Record<string, unknown[]>;
}

export function newColumns(names: string[], withStats: boolean[]): ColumnBuffer[] {
  return names.map((name, i) => ({ name, dlevels: [], values: [], distinct: withStats[i] ? new Set() : null }));
}

/** Hand the buffered rows to the library as one row group; returns fresh, empty buffers. */
export async function flushRowGroup(w: ParquetWriter, cols: ColumnBuffer[], rows: number): Promise<void> {
  if (rows === 0) return;
  // The last row travels through appendRow, in record form (the library converts it again).
  const last: Record<string, unknown> = {};
  for (const c of cols) {
    const d = c.dlevels.pop();
    last[c.name] = d === 1 ? c.values.pop() : null;
  }
  const buffer: LibRowBuffer = { rowCount: rows - 1, pageRowCount: rows - 1, columnData: {}, pages: {} };
  for (const c of cols) {
    buffer.columnData[c.name] = {
      dlevels: c.dlevels,
      rlevels: [],
      values: c.values,
      distinct_values: c.distinct ?? new Set(),
      count: rows - 1,
    };
    buffer.pages[c.name] = [];
  }
  const lib = w as unknown as { rowBuffer: LibRowBuffer | Record<string, never>; rowGroupSize: number };
  lib.rowBuffer = rows > 1 ? buffer : {};
  lib.rowGroupSize = rows;
  await w.appendRow(last);
}
