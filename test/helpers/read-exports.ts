import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { join } from 'node:path';
import { readdirSync, existsSync } from 'node:fs';
import { parse as parseCsv } from 'csv-parse/sync';
import { DuckDBInstance } from '@duckdb/node-api';
import type { Manifest, ManifestTask } from '../../src/manifest/types.ts';
import type { Row, TableSchema, Scalar } from '../../src/table.ts';

/**
 * An independent reader of what an export left on disk, used to check exports against the
 * sandbox's current data. It follows the documented rules only (manifests, not directory
 * listings; latest version per key; deletions; full snapshots), not the warehouse loader's code.
 */
export interface CommittedTask extends ManifestTask {
  run_id: string;
}

export function readManifests(dir: string): CommittedTask[] {
  const mdir = join(dir, '_manifests');
  if (!existsSync(mdir)) return [];
  const seen = new Set<string>();
  const out: CommittedTask[] = [];
  const purgedAt = new Map<string, string>(); // school -> run_id of its latest purge
  const add = (m: Manifest) => {
    // a purge of what a weaker personal-data policy wrote counts from its before_run
    for (const p of m.purged ?? []) {
      const at = p.before_run ?? m.run_id;
      if ((purgedAt.get(p.school_id) ?? '') < at) purgedAt.set(p.school_id, at);
    }
    // a run manifest of the bounded layout (version 2) lists no task: its parts, beside it, do
    for (const t of m.tasks ?? []) {
      if (t.status !== 'committed') continue;
      // A task committed in checkpoint pieces has one entry per piece (in parts and in the final manifest).
      const key = `${m.run_id}|${t.school_id}|${t.resource}|${t.checkpoint?.seq ?? 0}`;
      if (seen.has(key)) continue;
      seen.add(key);
      out.push({ ...t, run_id: m.run_id });
    }
  };
  for (const name of readdirSync(mdir).sort()) {
    const p = join(mdir, name);
    if (name.endsWith('.json')) add(JSON.parse(readFileSync(p, 'utf8')) as Manifest);
    // only parts: a killed run also leaves the temporary file of a part it was writing
    else
      for (const part of readdirSync(p).sort())
        if (/^part-\d+\.json$/.test(part)) add(JSON.parse(readFileSync(join(p, part), 'utf8')) as Manifest);
  }
  // A purge (access revoked) removed the school's files: what came before it is gone.
  return out
    .filter((t) => !(purgedAt.get(t.school_id) && t.run_id < purgedAt.get(t.school_id)!))
    .sort((a, b) => a.run_id.localeCompare(b.run_id));
}

/**
 * A finished run's manifest as one document: for the bounded layout (a version 2 run manifest
 * naming its parts) the header with the tasks and deletions of the parts it lists, in order; an
 * old (version 1) run manifest as it is. What tests look at, whichever layout wrote it.
 */
export function readRunManifest(dir: string, runId: string): Manifest {
  const m = JSON.parse(readFileSync(join(dir, '_manifests', `${runId}.json`), 'utf8')) as Omit<Manifest, 'version'> & {
    version: number;
    parts?: { path: string }[];
  };
  if (m.version !== 2) return m as Manifest;
  const { parts, ...header } = m;
  const docs = (parts ?? []).map((p) => JSON.parse(readFileSync(join(dir, p.path), 'utf8')) as Manifest);
  return { ...header, tasks: docs.flatMap((d) => d.tasks), deletions: docs.flatMap((d) => d.deletions) } as unknown as Manifest;
}

export async function readRows(dir: string, relPath: string, schema: TableSchema): Promise<Row[]> {
  const abs = join(dir, relPath);
  if (relPath.endsWith('.ndjson') || relPath.endsWith('.ndjson.gz')) {
    let buf = readFileSync(abs);
    if (relPath.endsWith('.gz')) buf = gunzipSync(buf);
    return buf
      .toString('utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Row);
  }
  if (relPath.endsWith('.csv')) {
    const types = new Map(schema.columns.map((c) => [c.name, c.type]));
    const records = parseCsv(readFileSync(abs), {
      columns: true,
      cast: (value: string, ctx: { quoting: boolean; column: string | number }) => {
        if (value === '' && !ctx.quoting) return null;
        const t = types.get(String(ctx.column));
        if (t === 'integer' || t === 'double') return Number(value);
        if (t === 'boolean') return value === 'true';
        return value;
      },
    }) as Row[];
    return records.map(unfoldExtra);
  }
  if (relPath.endsWith('.parquet')) {
    const inst = await DuckDBInstance.create(':memory:');
    const conn = await inst.connect();
    try {
      const reader = await conn.runAndReadAll(`SELECT * FROM read_parquet('${abs.replace(/'/g, "''")}', hive_partitioning = false)`);
      const cols = reader.columnNames();
      return reader.getRows().map((r) => {
        const row: Row = {};
        cols.forEach((c, i) => (row[c] = fromDuck(r[i])));
        return unfoldExtra(row);
      });
    } finally {
      conn.closeSync();
    }
  }
  throw new Error(`unknown file type ${relPath}`);
}

function fromDuck(v: unknown): Scalar {
  if (v === null || v === undefined) return null;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'object' && v !== null && 'micros' in v) {
    const micros = (v as { micros: bigint }).micros;
    const ms = Number(micros / 1000n);
    const frac = String(((micros % 1_000_000n) + 1_000_000n) % 1_000_000n).padStart(6, '0');
    return new Date(ms).toISOString().slice(0, 19) + '.' + frac + 'Z';
  }
  return v as Scalar;
}

/** CSV and Parquet keep undeclared fields in `_extra`; NDJSON as keys. Normalise to keys. */
function unfoldExtra(row: Row): Row {
  const extra = row._extra;
  delete row._extra;
  if (typeof extra === 'string' && extra) Object.assign(row, JSON.parse(extra) as Row);
  return row;
}

const STRIP = new Set(['_run_id', '_extracted_at', '_extra']);
export function stripMeta(row: Row): Row {
  const out: Row = {};
  for (const k of Object.keys(row).sort()) if (!STRIP.has(k) && row[k] !== undefined) out[k] = row[k]!;
  return out;
}

/**
 * Current state per table from all committed tasks: for each (school, table), rows from the
 * latest full snapshot of the owning resource onwards; the latest version per key; minus rows
 * deleted after their version (unless restored later); children follow their parent's version.
 */
export async function currentState(
  dir: string,
  schemas: Map<string, { schema: TableSchema; resource: string; parent?: { table: string; key: string } }>,
): Promise<Map<string, Row[]>> {
  const tasks = readManifests(dir);
  const lastFull = new Map<string, string>(); // school|resource -> run_id
  // A full read committed in pieces is a snapshot only once its final piece is in, and it began
  // with the run that read its first piece.
  for (const t of tasks) {
    if (t.mode !== 'full' || (t.checkpoint && !t.checkpoint.final)) continue;
    const began = t.checkpoint?.snapshot ?? t.run_id;
    const k = `${t.school_id}|${t.resource}`;
    if ((lastFull.get(k) ?? '') < began) lastFull.set(k, began);
  }
  const rowsByTable = new Map<string, { row: Row; run: string }[]>();
  for (const t of tasks) {
    const since = lastFull.get(`${t.school_id}|${t.resource}`);
    if (since && t.run_id < since) continue;
    for (const f of t.files) {
      const s = schemas.get(f.table);
      if (!s) throw new Error(`no schema for ${f.table}`);
      const list = rowsByTable.get(f.table) ?? [];
      for (const row of await readRows(dir, f.path, s.schema)) list.push({ row, run: t.run_id });
      rowsByTable.set(f.table, list);
    }
  }
  // Deletion events per (school, table, id): the latest decides.
  const deleted = new Map<string, { at: string; restored: string | null }>();
  for (const { row } of rowsByTable.get('deletions') ?? []) {
    if (!row.table) continue;
    const k = `${row._school_id}|${row.table}|${row.id}`;
    const cur = deleted.get(k);
    const at = String(row.deleted_at);
    if (!cur || at > cur.at || (at === cur.at && (row.restored_at ?? '') > (cur.restored ?? '')))
      deleted.set(k, { at, restored: (row.restored_at as string | null) ?? null });
  }
  const out = new Map<string, Row[]>();
  const chosenRun = new Map<string, string>(); // table|school|id -> _run_id of the chosen version
  const order = [...schemas.entries()].sort((a, b) => Number(Boolean(a[1].parent)) - Number(Boolean(b[1].parent)));
  for (const [table, { schema, parent }] of order) {
    if (table === 'deletions') continue;
    const latest = new Map<string, Row>();
    for (const { row } of rowsByTable.get(table) ?? []) {
      const key = [row._school_id, ...schema.key.map((k) => row[k])].join('|');
      const cur = latest.get(key);
      const newer =
        !cur ||
        String(row.updated_at ?? '') > String(cur.updated_at ?? '') ||
        (String(row.updated_at ?? '') === String(cur.updated_at ?? '') && String(row._extracted_at) > String(cur._extracted_at));
      if (newer) latest.set(key, row);
    }
    const rows: Row[] = [];
    for (const row of latest.values()) {
      if (parent) {
        const pr = chosenRun.get(`${parent.table}|${row._school_id}|${row[parent.key]}`);
        if (pr !== row._run_id) continue;
      } else if (schema.key.includes('id')) {
        const d = deleted.get(`${row._school_id}|${table}|${row.id}`);
        if (d && d.at >= String(row.updated_at ?? '') && !(d.restored && d.restored >= d.at)) continue;
        chosenRun.set(`${table}|${row._school_id}|${row.id}`, String(row._run_id));
      }
      rows.push(row);
    }
    out.set(table, rows);
  }
  return out;
}

/** The current-state tables the DuckDB warehouse loader builds from an export, as plain rows. */
export async function warehouseState(dir: string, dbPath: string): Promise<Map<string, Row[]>> {
  const { warehouseLoad } = await import('../../src/warehouse/commands.ts');
  await warehouseLoad({ dest: dir, into: `duckdb:${dbPath}` });
  const inst = await DuckDBInstance.create(dbPath);
  const conn = await inst.connect();
  const out = new Map<string, Row[]>();
  try {
    const tables = (
      await conn.runAndReadAll(
        `SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' AND table_name NOT LIKE '\\_%' ESCAPE '\\'`,
      )
    )
      .getRows()
      .map((r) => String(r[0]));
    for (const t of tables) {
      const reader = await conn.runAndReadAll(`SELECT * FROM "${t}"`);
      const cols = reader.columnNames();
      out.set(
        t,
        reader.getRows().map((r) => {
          const row: Row = {};
          cols.forEach(
            (c, i) =>
              (row[c] = fromDuck(
                r[i] instanceof Object && 'toString' in (r[i] as object) && !('micros' in (r[i] as object)) ? String(r[i]) : r[i],
              )),
          );
          return unfoldExtra(row);
        }),
      );
    }
  } finally {
    conn.closeSync();
  }
  return out;
}
