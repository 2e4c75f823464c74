import { DuckDBInstance } from '@duckdb/node-api';
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { Manifest, ManifestTask } from '../../src/manifest/types.ts';
import { EXTRA_COLUMN, META_COLUMNS, type ColumnDef, type Row, type TableSchema } from '../../src/table.ts';
import type { WarehouseSource } from '../../src/warehouse/manifests.ts';
import { renderSqlStatements } from '../../src/warehouse/render.ts';

/** Small hand-made schemas in the shape src/resources produces. */
const col = (name: string, type: ColumnDef['type'], nullable = true): ColumnDef => ({ name, type, nullable });
const ts = (name: string): ColumnDef[] => [col(name, 'timestamp'), col(`${name}__timezone`, 'string')];
const withMeta = (name: string, cols: ColumnDef[], key: string[]): TableSchema => ({
  name,
  columns: [...cols, ...META_COLUMNS, EXTRA_COLUMN],
  key,
});

export const SCHEMAS: TableSchema[] = [
  withMeta(
    'achievements',
    [
      col('id', 'string', false),
      col('points', 'integer'),
      col('score', 'double'),
      col('comment', 'string'),
      col('parents_notified', 'boolean'),
      col('details', 'json'),
      ...ts('updated_at'),
    ],
    ['id'],
  ),
  withMeta('achievement_students', [col('achievement_id', 'string', false), col('id', 'string', false)], ['achievement_id', 'id']),
  withMeta('school_meta', [col('online', 'boolean'), col('approved', 'boolean')], []),
  withMeta('school_permissions', [col('identity', 'string', false), col('approved', 'boolean')], ['identity']),
  withMeta(
    'deletions',
    [
      col('type', 'string', false),
      col('id', 'string', false),
      col('mis_id', 'string'),
      ...ts('deleted_at'),
      ...ts('restored_at'),
      col('detected_by', 'string', false),
      col('table', 'string'),
    ],
    ['type', 'id'],
  ),
];

export type Format = 'ndjson' | 'ndjson.gz' | 'csv' | 'parquet';
export interface TaskSpec {
  school: string;
  resource: string;
  mode: 'full' | 'incremental';
  status?: ManifestTask['status'];
  tables: Record<string, Row[]>;
  checkpoint?: ManifestTask['checkpoint'];
  scope_masked?: ManifestTask['scope_masked'];
}

export interface RunOptions {
  purged?: Manifest['purged'];
  schemas?: TableSchema[];
  /** Write the run as this part file (`_manifests/<run>/part-<n>.json`), as a run still going or killed leaves it. */
  part?: number;
  personal_data?: Manifest['personal_data'];
  /** When the rows were read (default: the run id's time). */
  extractedAt?: string;
}

const schemaOf = (name: string, schemas: TableSchema[]): TableSchema => {
  const s = schemas.find((x) => x.name === name);
  if (!s) throw new Error(`no schema ${name}`);
  return s;
};

/** Adds the metadata columns every row carries. */
export function meta(rows: Row[], school: string, runId: string, extractedAt: string): Row[] {
  return rows.map((r) => ({ ...r, _school_id: school, _region: 'uk', _run_id: runId, _extracted_at: extractedAt }));
}

/** Writes the run's files in `format` and its manifest (written last, as the pipeline does). */
export async function writeRun(
  dest: string,
  runId: string,
  format: Format,
  tasks: TaskSpec[],
  purgedOrOptions: Manifest['purged'] | RunOptions = [],
  schemas: TableSchema[] = SCHEMAS,
): Promise<Manifest> {
  const opts: RunOptions = Array.isArray(purgedOrOptions) ? { purged: purgedOrOptions, schemas } : { schemas, ...purgedOrOptions };
  const extractedAt = opts.extractedAt ?? runIdToIso(runId);
  const mtasks: ManifestTask[] = [];
  for (const task of tasks) {
    const files: ManifestTask['files'] = [];
    const counts: Record<string, number> = {};
    // Pieces of one task in one run write files with distinct sequence numbers.
    const seq0 = 1 + 100 * (task.checkpoint?.seq ?? 0);
    for (const [table, rows] of Object.entries(task.tables)) {
      counts[table] = rows.length;
      if (rows.length === 0) continue;
      const rel = `${table}/region=uk/school_id=${task.school}/${runId}-${String(seq0 + files.length).padStart(4, '0')}.${format}`;
      const bytes = await writeTableFile(
        join(dest, rel),
        schemaOf(table, opts.schemas ?? SCHEMAS),
        meta(rows, task.school, runId, extractedAt),
        format,
      );
      files.push({ table, path: rel, rows: rows.length, bytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') });
    }
    const status = task.status ?? 'committed';
    mtasks.push({
      school_id: task.school,
      region: 'uk',
      resource: task.resource,
      status,
      mode: task.mode,
      files,
      rows: counts,
      ...(task.checkpoint ? { checkpoint: task.checkpoint } : {}),
      ...(task.scope_masked ? { scope_masked: task.scope_masked } : {}),
    });
  }
  const manifest: Manifest = {
    version: 1,
    run_id: runId,
    started_at: extractedAt,
    finished_at: extractedAt,
    format: format === 'ndjson.gz' ? 'ndjson' : format,
    status: opts.part === undefined ? 'ok' : 'running',
    ...(opts.part === undefined ? {} : { part: opts.part }),
    ...(opts.personal_data ? { personal_data: opts.personal_data } : {}),
    tasks: mtasks,
    deletions: [],
    purged: opts.purged ?? [],
  };
  await writeManifest(dest, manifest);
  return manifest;
}

/** A manifest as the exporter writes it: one line of JSON (BigQuery reads manifests as newline-delimited JSON). */
export async function writeManifest(dest: string, manifest: Manifest): Promise<void> {
  const rel =
    manifest.part === undefined
      ? join('_manifests', `${manifest.run_id}.json`)
      : join('_manifests', manifest.run_id, `part-${String(manifest.part).padStart(5, '0')}.json`);
  await mkdir(dirname(join(dest, rel)), { recursive: true });
  await writeFile(join(dest, rel), JSON.stringify(manifest) + '\n');
}

/** '20240201T000000Z-0002' -> '2024-02-01T00:00:00.000000Z' */
export function runIdToIso(runId: string): string {
  const m = /^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z/.exec(runId);
  if (!m) throw new Error(`bad run id ${runId}`);
  return `${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}.000000Z`;
}

export async function writeTableFile(path: string, schema: TableSchema, rows: Row[], format: Format): Promise<Buffer> {
  await mkdir(dirname(path), { recursive: true });
  if (format === 'ndjson' || format === 'ndjson.gz') {
    // Undeclared fields stay keys of their own, as the NDJSON writer keeps them.
    const text = rows.map((r) => JSON.stringify(r)).join('\n') + '\n';
    await writeFile(path, format === 'ndjson' ? text : gzipSync(text));
    return readFile(path);
  }
  rows = rows.map((r) => foldExtra(schema, r));
  const ndjson = rows.map((r) => JSON.stringify(r)).join('\n') + '\n';
  if (format === 'csv') {
    await writeFile(path, toCsv(schema, rows));
  } else {
    await writeParquetWithDuckDb(path, schema, ndjson);
  }
  return readFile(path);
}

/** CSV and Parquet carry undeclared fields as JSON text in `_extra`. */
function foldExtra(schema: TableSchema, row: Row): Row {
  const declared = new Set(schema.columns.map((c) => c.name));
  const out: Row = {};
  const extra: Row = {};
  for (const [k, v] of Object.entries(row)) (declared.has(k) ? out : extra)[k] = v;
  out._extra = Object.keys(extra).length > 0 ? JSON.stringify(extra) : null;
  return out;
}

// The CSV writer's conventions (src/format/csv.ts): null is an empty field, '' is "".
function toCsv(schema: TableSchema, rows: Row[]): string {
  const cell = (v: unknown): string => {
    if (v === null || v === undefined) return '';
    const s = String(v);
    return s === '' || /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  };
  const names = schema.columns.map((c) => c.name);
  return [names.join(','), ...rows.map((r) => names.map((n) => cell(r[n])).join(','))].join('\r\n') + '\r\n';
}

const DUCK_TYPES: Record<ColumnDef['type'], string> = {
  string: 'VARCHAR',
  integer: 'BIGINT',
  double: 'DOUBLE',
  boolean: 'BOOLEAN',
  timestamp: 'TIMESTAMPTZ',
  json: 'VARCHAR',
};

async function writeParquetWithDuckDb(path: string, schema: TableSchema, ndjson: string): Promise<void> {
  const tmp = `${path}.tmp.ndjson`;
  await writeFile(tmp, ndjson);
  const db = await DuckDBInstance.create(':memory:');
  const c = await db.connect();
  try {
    await c.run("SET TimeZone = 'UTC'");
    const cols = schema.columns.map((x) => `'${x.name}': '${DUCK_TYPES[x.type]}'`).join(', ');
    await c.run(
      `COPY (SELECT * FROM read_json('${tmp}', format = 'newline_delimited', columns = {${cols}})) TO '${path}' (FORMAT parquet)`,
    );
  } finally {
    c.closeSync();
    db.closeSync();
    await rm(tmp, { force: true });
  }
}

/** A destination directory seen through the Sink methods the loader uses. */
export function dirSource(dest: string, opts: { local: boolean; stream?: boolean }): WarehouseSource {
  const src: WarehouseSource = {
    url: `file://${dest}`,
    async read(rel) {
      return readFile(join(dest, rel)).catch(() => undefined);
    },
    async list(prefix) {
      const out: string[] = [];
      const walk = async (rel: string): Promise<void> => {
        const entries = await readdir(join(dest, rel), { withFileTypes: true }).catch(() => []);
        for (const e of entries) {
          const p = rel ? `${rel}/${e.name}` : e.name;
          if (e.isDirectory()) await walk(p);
          else if (p.startsWith(prefix)) out.push(p);
        }
      };
      await walk('');
      return out.sort();
    },
  };
  if (opts.local) src.localPath = (rel) => join(dest, rel);
  if (opts.stream) src.readStream = async (rel) => (existsSync(join(dest, rel)) ? createReadStream(join(dest, rel)) : undefined);
  return src;
}

/**
 * The static load script (what the BigQuery and Snowflake scripts do) rendered in the DuckDB
 * dialect and run statement by statement, as `duckdb -bail FILE < load.sql` would.
 */
export async function runStaticScript(
  dest: string,
  dbPath: string,
  tables: TableSchema[] = SCHEMAS,
  opts: { requirePseudonymised?: boolean } = {},
): Promise<void> {
  const statements = renderSqlStatements({ dialect: 'duckdb', location: dest, tables, ...opts });
  const db = await DuckDBInstance.create(dbPath);
  const c = await db.connect();
  try {
    for (const s of statements) await c.run(s);
  } finally {
    c.closeSync();
    db.closeSync();
  }
}

/** All rows of a table, sorted, with timestamps as ISO text: for comparing states. */
export async function dump(dbPath: string, sql: string): Promise<Record<string, unknown>[]> {
  const db = await DuckDBInstance.create(dbPath);
  const c = await db.connect();
  try {
    await c.run("SET TimeZone = 'UTC'");
    const r = await c.runAndReadAll(sql);
    return r.getRowObjectsJson() as Record<string, unknown>[];
  } finally {
    c.closeSync();
    db.closeSync();
  }
}

/** The parts a run's manifest lists (this layout), or its run manifest (an old one repeating every task). */
function runDocPaths(dest: string, runId: string): string[] {
  const run = JSON.parse(readFileSync(join(dest, '_manifests', `${runId}.json`), 'utf8')) as {
    version: number;
    parts?: { path: string }[];
  };
  return run.version === 2 ? (run.parts ?? []).map((p) => p.path) : [join('_manifests', `${runId}.json`)];
}

/** A finished run's task entries, read from its parts. */
export function runEntries(dest: string, runId: string): ManifestTask[] {
  return runDocPaths(dest, runId).flatMap((p) => (JSON.parse(readFileSync(join(dest, p), 'utf8')) as Manifest).tasks);
}

/** Rewrites a finished run's task entries where its parts hold them (tests that edit what a run recorded). */
export function rewriteRunEntries(dest: string, runId: string, edit: (t: ManifestTask) => void): void {
  for (const p of runDocPaths(dest, runId)) {
    const m = JSON.parse(readFileSync(join(dest, p), 'utf8')) as Manifest;
    m.tasks.forEach(edit);
    writeFileSync(join(dest, p), JSON.stringify(m) + '\n');
  }
}
