import type { DuckDBConnection } from '@duckdb/node-api';
import { createReadStream } from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createGzip } from 'node:zlib';
import { ExportError } from '../errors.ts';
import { endStream, writeChunk } from '../format/write-stream.ts';
import { BuiltinParquetWriter, DEFAULT_ROW_GROUP_BYTES, DEFAULT_ROW_GROUP_ROWS, parquetColumns } from '../format/parquet/writer.ts';
import type { ColumnType, TableSchema } from '../table.ts';

/**
 * Merging one partition's files into one file of the same format, values untouched:
 *
 * - NDJSON: the lines of each file, in order (gunzipped and gzipped again when the files were).
 * - CSV: the first file's header, then every file's records (a file whose header differs is
 *   never in the same merge: see shapeOf).
 * - Parquet: each file's rows read by DuckDB and appended column by column to the built-in
 *   writer (format/parquet/writer.ts), the encoding `run` writes: the same columns and types,
 *   the same row groups, snappy. Values are parsed only to be encoded again, never looked at.
 *
 * Nothing here logs a value or puts one in an error.
 */

export type FileKind = 'ndjson' | 'ndjson.gz' | 'csv' | 'csv.gz' | 'parquet';

export function kindOf(path: string): FileKind | undefined {
  const m = /\.(ndjson|csv)(\.gz)?$|\.parquet$/.exec(path);
  if (!m) return undefined;
  return (m[1] ? `${m[1]}${m[2] ?? ''}` : 'parquet') as FileKind;
}

const gzipped = (k: FileKind): boolean => k.endsWith('.gz');

/** The bytes of a local file, gunzipped when its kind is. */
function open(local: string, kind: FileKind): Readable {
  const raw = createReadStream(local);
  if (!gzipped(kind)) return raw;
  const gunzip = createGunzip();
  raw.on('error', (e) => gunzip.destroy(e));
  return raw.pipe(gunzip);
}

/** A CSV file's header line (column names, no values), read from its first bytes. */
async function csvHeader(local: string, kind: FileKind): Promise<string> {
  let head = Buffer.alloc(0);
  const stream = open(local, kind);
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      head = Buffer.concat([head, chunk]);
      const nl = head.indexOf(0x0a);
      if (nl >= 0) return head.subarray(0, nl + 1).toString('utf8');
      if (head.length > 1 << 20) break;
    }
  } finally {
    stream.destroy();
  }
  return head.toString('utf8');
}

/** Parquet columns as DuckDB reads them: name and DuckDB type. */
interface ParquetShape {
  columns: { name: string; duckType: string; type: ColumnType }[];
}

const PARQUET_TYPES: Record<string, ColumnType> = {
  VARCHAR: 'string',
  BIGINT: 'integer',
  DOUBLE: 'double',
  BOOLEAN: 'boolean',
  'TIMESTAMP WITH TIME ZONE': 'timestamp',
  TIMESTAMP: 'timestamp',
};

const sqlString = (s: string): string => `'${s.replace(/'/g, "''")}'`;
const ident = (s: string): string => `"${s.replace(/"/g, '""')}"`;

/**
 * What files must share to be merged into one: CSV their header, Parquet their columns and
 * types. undefined: a file this merge cannot re-encode exactly (a column type the writers never
 * write), left as it is.
 */
export async function shapeOf(local: string, kind: FileKind, conn: () => Promise<DuckDBConnection>): Promise<string | undefined> {
  if (kind === 'ndjson' || kind === 'ndjson.gz') return kind;
  if (kind === 'csv' || kind === 'csv.gz') return `${kind}|${await csvHeader(local, kind)}`;
  const shape = await parquetShape(await conn(), local);
  return shape && `parquet|${JSON.stringify(shape.columns.map((c) => [c.name, c.type]))}`;
}

async function parquetShape(conn: DuckDBConnection, local: string): Promise<ParquetShape | undefined> {
  const rows = (
    await conn.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet(${sqlString(local)}, hive_partitioning = false)`)
  ).getRowObjectsJS();
  const columns: ParquetShape['columns'] = [];
  for (const r of rows) {
    const duckType = String(r.column_type);
    const type = PARQUET_TYPES[duckType];
    if (!type) return undefined;
    columns.push({ name: String(r.column_name), duckType, type });
  }
  return { columns };
}

/**
 * Writes the merge of `locals` (local paths, in order) to `out` and ends it. Returns the rows
 * written when the format counts them exactly (NDJSON lines, Parquet rows; CSV records may hold
 * line breaks: undefined).
 */
export async function mergeFiles(
  kind: FileKind,
  locals: string[],
  out: Writable,
  conn: () => Promise<DuckDBConnection>,
): Promise<number | undefined> {
  if (kind === 'parquet') return mergeParquet(await conn(), locals, out);
  return mergeText(kind, locals, out);
}

async function mergeText(kind: FileKind, locals: string[], out: Writable): Promise<number | undefined> {
  const csv = kind.startsWith('csv');
  let target: Writable = out;
  let done: Promise<void> = Promise.resolve();
  if (gzipped(kind)) {
    const gz = createGzip();
    target = gz;
    done = pipeline(gz, out);
    done.catch(() => {}); // observed below
  }
  let lines = 0;
  for (const [i, local] of locals.entries()) {
    let skipHeader = csv && i > 0;
    let last = 0x0a;
    for await (const piece of open(local, kind) as AsyncIterable<Buffer>) {
      let chunk = piece;
      if (skipHeader) {
        const nl = chunk.indexOf(0x0a);
        if (nl < 0) continue; // still inside the header
        chunk = chunk.subarray(nl + 1);
        skipHeader = false;
      }
      if (chunk.length === 0) continue;
      for (let at = chunk.indexOf(0x0a); at >= 0; at = chunk.indexOf(0x0a, at + 1)) lines++;
      last = chunk[chunk.length - 1]!;
      await writeChunk(target, chunk);
    }
    // the writers end every line; a file that does not would run into the next one's first line
    if (last !== 0x0a) {
      await writeChunk(target, csv ? '\r\n' : '\n');
      lines++;
    }
  }
  if (target === out) await endStream(out);
  else {
    target.end();
    await done;
  }
  return csv ? undefined : lines;
}

async function mergeParquet(conn: DuckDBConnection, locals: string[], out: Writable): Promise<number> {
  const first = await parquetShape(conn, locals[0]!);
  if (!first) throw new ExportError('E_INTERNAL', 'compact: a Parquet file with a column type the writers do not write');
  const schema: TableSchema = {
    name: 'compact',
    columns: first.columns.map((c) => ({ name: c.name, type: c.type, nullable: true })),
    key: [],
  };
  const writer = new BuiltinParquetWriter(schema, out, { rows: DEFAULT_ROW_GROUP_ROWS, bytes: DEFAULT_ROW_GROUP_BYTES });
  const order = parquetColumns(schema).map((c) => c.name);
  const builders = writer.encoder.builders;
  // where each column read goes in the writer's columns (the writer puts `_extra` last, and adds it when absent)
  const at = first.columns.map((c) => order.indexOf(c.name));
  const unfilled = order.map((_, i) => i).filter((i) => !at.includes(i));
  const select = first.columns
    .map((c) => (c.type === 'timestamp' ? `epoch_us(${ident(c.name)}) AS ${ident(c.name)}` : ident(c.name)))
    .join(', ');
  const types = first.columns.map((c) => c.type);
  for (const local of locals) {
    const result = await conn.stream(`SELECT ${select} FROM read_parquet(${sqlString(local)}, hive_partitioning = false)`);
    for (;;) {
      const chunk = await result.fetchChunk();
      if (!chunk || chunk.rowCount === 0) break;
      for (const row of chunk.getRows()) {
        for (let i = 0; i < row.length; i++) append(builders[at[i]!]!, row[i], types[i]!);
        for (const i of unfilled) builders[i]!.null();
        if (writer.rowAppended()) await writer.flushRowGroup();
      }
    }
  }
  await writer.finish();
  return writer.rowsWritten;
}

function append(b: BuiltinParquetWriter['encoder']['builders'][number], v: unknown, type: ColumnType): void {
  if (v === null || v === undefined) return b.null();
  switch (type) {
    case 'integer':
    case 'timestamp': {
      const n = typeof v === 'bigint' ? Number(v) : Number.NaN;
      if (!Number.isSafeInteger(n)) throw new ExportError('E_DATA', `compact: a ${type} value outside the range the writers write`);
      return b.int64(n);
    }
    case 'double':
      return b.double(Number(v));
    case 'boolean':
      return b.boolean(v === true);
    default:
      return b.string(String(v));
  }
}
