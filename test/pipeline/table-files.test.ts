import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { LocalSink } from '../../src/sink/local.ts';
import { formatByName } from '../../src/format/index.ts';
import { TableFiles, type TableFilesOptions } from '../../src/pipeline/table-files.ts';
import type { Row, TableSchema } from '../../src/table.ts';

const RUN = '20260101T000000.000Z-abcd';
const DIR = 'things/region=uk/school_id=A1001';
const SCHEMA: TableSchema = {
  name: 'things',
  columns: [
    { name: 'id', type: 'string', nullable: false },
    { name: 'n', type: 'integer', nullable: true },
  ],
  key: ['id'],
};

const rows = (from: number, count: number): Row[] => Array.from({ length: count }, (_, i) => ({ id: `T${from + i}`, n: from + i }));

/** Every file under dir, temp files included (a leftover temp file is a defect too). */
function allFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(d, e.name));
      else out.push(relative(dir, join(d, e.name)).split('\\').join('/'));
    }
  };
  walk(dir);
  return out.sort();
}

const ndjsonIds = (dir: string, path: string): string[] =>
  readFileSync(join(dir, path), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => (JSON.parse(l) as Row).id as string);

describe('TableFiles', () => {
  let dir: string;
  let sink: LocalSink;
  let seqs: Map<string, number>;
  const nextSeq = (d: string) => {
    const n = (seqs.get(d) ?? 0) + 1;
    seqs.set(d, n);
    return n;
  };
  const open = (o: Partial<TableFilesOptions> = {}) =>
    new TableFiles({
      sink,
      format: formatByName('ndjson'),
      formatOptions: {},
      schema: SCHEMA,
      dir: DIR,
      runId: RUN,
      nextSeq,
      limits: { maxRows: 10, maxBytes: 1 << 30 },
      ...o,
    });

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'table-files-'));
    sink = new LocalSink(dir);
    seqs = new Map();
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('rolls files over at the row limit, names them <run>-<seq>, and shows nothing before commit', async () => {
    const t = open();
    await t.write(rows(0, 7));
    await t.write(rows(7, 18)); // crosses two limits inside one batch
    expect(t.rows).toBe(25);
    expect(allFiles(dir).filter((f) => !f.split('/').pop()!.startsWith('.'))).toEqual([]);

    const files = await t.commit();
    expect(files.map((f) => [f.path, f.rows])).toEqual([
      [`${DIR}/${RUN}-0001.ndjson`, 10],
      [`${DIR}/${RUN}-0002.ndjson`, 10],
      [`${DIR}/${RUN}-0003.ndjson`, 5],
    ]);
    for (const f of files) {
      const bytes = readFileSync(join(dir, f.path));
      expect(f).toMatchObject({ table: 'things', bytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') });
    }
    expect(files.flatMap((f) => ndjsonIds(dir, f.path))).toEqual(rows(0, 25).map((r) => r.id));
    expect(allFiles(dir)).toEqual(files.map((f) => f.path).sort());
  });

  it('commits more than once: each commit returns only the files written since the previous one', async () => {
    const t = open();
    await t.write(rows(0, 4));
    const first = await t.commit();
    expect(first.map((f) => [f.path, f.rows])).toEqual([[`${DIR}/${RUN}-0001.ndjson`, 4]]);
    expect(await t.commit()).toEqual([]); // nothing new
    await t.write(rows(4, 12));
    const second = await t.commit();
    expect(second.map((f) => [f.path, f.rows])).toEqual([
      [`${DIR}/${RUN}-0002.ndjson`, 10],
      [`${DIR}/${RUN}-0003.ndjson`, 2],
    ]);
    expect(t.rows).toBe(16);
    // The first piece is untouched by the second.
    expect(ndjsonIds(dir, first[0]!.path)).toEqual(rows(0, 4).map((r) => r.id));
    expect(allFiles(dir)).toEqual([...first, ...second].map((f) => f.path).sort());
  });

  it('rolls over at the byte limit after the batch that crossed it', async () => {
    const t = open({ limits: { maxRows: 1000, maxBytes: 40 } });
    await t.write(rows(0, 3)); // about 60 bytes: one file, then a new one
    await t.write(rows(3, 1));
    const files = await t.commit();
    expect(files.map((f) => f.rows)).toEqual([3, 1]);
    expect(files[0]!.bytes).toBeGreaterThanOrEqual(40);
  });

  it('shares the per-directory counter with other writers of the same directory', async () => {
    const a = open();
    const b = open();
    await a.write(rows(0, 1));
    await b.write(rows(1, 1));
    await a.write(rows(2, 10)); // fills a's first file, rolls, then opens nothing until more rows come
    await a.write(rows(12, 1));
    const paths = [...(await a.commit()), ...(await b.commit())].map((f) => f.path.split('/').pop());
    expect(paths).toEqual([`${RUN}-0001.ndjson`, `${RUN}-0003.ndjson`, `${RUN}-0002.ndjson`]);
  });

  it('abort discards every uncommitted file (done and open) and leaves no temp file; committed files stay', async () => {
    const t = open();
    await t.write(rows(0, 3));
    const kept = await t.commit();
    await t.write(rows(3, 15)); // one finished file, one open
    await t.abort();
    expect(allFiles(dir)).toEqual(kept.map((f) => f.path));
    await t.abort(); // idempotent
    expect(await t.commit()).toEqual([]);
  });

  it('writes the format it is given (gzip NDJSON, CSV) with its extension', async () => {
    const gz = open({ formatOptions: { gzip: true } });
    await gz.write(rows(0, 2));
    const csv = open({ format: formatByName('csv'), dir: 'csv/region=uk/school_id=A1001' });
    await csv.write(rows(0, 2));
    const [g] = await gz.commit();
    const [c] = await csv.commit();
    expect(g!.path).toBe(`${DIR}/${RUN}-0001.ndjson.gz`);
    expect(readFileSync(join(dir, g!.path)).subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b]));
    expect(c!.path).toBe(`csv/region=uk/school_id=A1001/${RUN}-0001.csv`);
    expect(readFileSync(join(dir, c!.path), 'utf8').split(/\r?\n/).filter(Boolean)).toHaveLength(3);
  });
});
