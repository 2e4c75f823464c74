import { DuckDBInstance } from '@duckdb/node-api';
import type { Row, Scalar } from '../../src/table.ts';

/**
 * The current-state tables of a DuckDB warehouse as plain rows (timestamps as ISO text with six
 * fractional digits, numbers as numbers, undeclared fields unfolded from `_extra`), in the shape
 * test/integration/helpers.ts's expectedState gives for the sandbox's data.
 */
export async function currentTables(dbPath: string, opts: { raw?: boolean } = {}): Promise<Map<string, Row[]>> {
  const inst = await DuckDBInstance.create(dbPath);
  const conn = await inst.connect();
  const out = new Map<string, Row[]>();
  try {
    const names = (
      await conn.runAndReadAll(
        `SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' AND table_type = 'BASE TABLE' AND ` +
          (opts.raw ? `table_name LIKE '\\_raw\\_%' ESCAPE '\\'` : `table_name NOT LIKE '\\_%' ESCAPE '\\'`),
      )
    )
      .getRows()
      .map((r) => String(r[0]));
    for (const t of names) {
      const reader = await conn.runAndReadAll(`SELECT * FROM "${t}"`);
      const cols = reader.columnNames();
      out.set(
        t,
        reader.getRows().map((r) => {
          const row: Row = {};
          cols.forEach((c, i) => (row[c] = plain(r[i])));
          const extra = row._extra;
          delete row._extra;
          if (typeof extra === 'string' && extra) Object.assign(row, JSON.parse(extra) as Row);
          return row;
        }),
      );
    }
  } finally {
    conn.closeSync();
    inst.closeSync();
  }
  return out;
}

function plain(v: unknown): Scalar {
  if (v === null || v === undefined) return null;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'object' && 'micros' in v) {
    const micros = (v as { micros: bigint }).micros;
    const ms = Number(micros / 1000n);
    const frac = String(((micros % 1_000_000n) + 1_000_000n) % 1_000_000n).padStart(6, '0');
    return new Date(ms).toISOString().slice(0, 19) + '.' + frac + 'Z';
  }
  if (typeof v === 'object') return String(v); // JSON values
  return v as Scalar;
}
