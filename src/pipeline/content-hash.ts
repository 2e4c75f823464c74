import { createHash, type Hash } from 'node:crypto';
import type { EncodedChunk } from '../format/chunk.ts';
import { parquetColumns } from '../format/parquet/writer.ts';
import type { Row, TableSchema } from '../table.ts';

/**
 * The content of a full read, as one SHA-256, computed page by page while the rows are written
 * (nothing held): when it equals the hash of the last committed version of the same (school,
 * resource), the read writes no file and the manifest says `unchanged` (docs/scale.md).
 *
 * What it covers: every row written, per table and in order, as it goes into the files, minus the
 * per-run metadata columns `_run_id` and `_extracted_at` (they change every run, the content does
 * not); and, first, what the files are written under: the format, its options and the
 * personal-data policy's fingerprint (policy and key), so a run with another format or policy
 * always writes its files. Same rows, same settings, same hash, whichever thread or path encoded
 * them (the fast generated serialisers and the reference path write the same bytes).
 *
 * Rows arrive either flattened (Row objects: each row's JSON without those two keys) or already
 * encoded for the format (src/encode): text chunks are hashed without the two values' text
 * (constant within a task, written verbatim), Parquet column chunks without those two columns.
 * Each table's part is framed by its name and row count (text by its own digest, columns by their
 * sizes), so different contents never run together into the same stream; a different split of the
 * same rows (another page size) can only make a read look changed, which costs a rewrite, never
 * a lost change.
 */
export class ContentHash {
  private readonly hash: Hash = createHash('sha256');
  private readonly needles: Buffer[];
  private readonly skipColumns = new Map<string, Set<number>>();

  /** `under`: the settings the files are written under; `perRun`: this task's _run_id and _extracted_at values. */
  constructor(under: Record<string, unknown>, perRun: { _run_id: string; _extracted_at: string }) {
    this.hash.update(canonicalJson({ v: 1, ...under }) + '\n');
    this.needles = [Buffer.from(perRun._run_id), Buffer.from(perRun._extracted_at)].filter((b) => b.length > 0);
  }

  /** Flattened rows of one table, in the order written. */
  rows(table: string, rows: readonly Row[]): void {
    this.hash.update(`\n${table}\trows ${rows.length}\n`);
    for (const r of rows) {
      const { _run_id: _r, _extracted_at: _e, ...rest } = r;
      this.hash.update(JSON.stringify(rest) + '\n');
    }
  }

  /** Rows of one table encoded for the format (schema: the table's, for Parquet column positions). */
  chunk(table: string, chunk: EncodedChunk, schema: TableSchema): void {
    if (chunk.kind === 'text') {
      // framed by the digest of the text without the per-run values (their length may vary)
      this.hash.update(`\n${table}\ttext ${chunk.rows} `);
      this.hash.update(this.textWithout(chunk.bytes));
      return;
    }
    const skip = this.perRunColumns(schema);
    this.hash.update(`\n${table}\tcolumns ${chunk.rows} ${chunk.columns.length}\n`);
    chunk.columns.forEach((c, i) => {
      if (skip.has(i)) return;
      this.hash.update(`${i} ${c.physical} ${c.defs.length} ${c.data.length}\n`);
      this.hash.update(c.defs);
      this.hash.update(c.data);
    });
  }

  digest(): string {
    return this.hash.digest('hex');
  }

  /** The digest of the bytes minus every occurrence of the per-run values. */
  private textWithout(bytes: Uint8Array): Buffer {
    const h = createHash('sha256');
    const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const next = this.needles.map((n) => buf.indexOf(n));
    let pos = 0;
    for (;;) {
      let k = -1;
      for (let i = 0; i < next.length; i++) if (next[i]! >= 0 && (k < 0 || next[i]! < next[k]!)) k = i;
      if (k < 0) break;
      h.update(buf.subarray(pos, next[k]!));
      pos = next[k]! + this.needles[k]!.length;
      for (let i = 0; i < next.length; i++) if (next[i]! >= 0 && next[i]! < pos) next[i] = buf.indexOf(this.needles[i]!, pos);
    }
    h.update(buf.subarray(pos));
    return h.digest();
  }

  private perRunColumns(schema: TableSchema): Set<number> {
    let s = this.skipColumns.get(schema.name);
    if (!s) {
      s = new Set<number>();
      parquetColumns(schema).forEach((c, i) => {
        if (c.name === '_run_id' || c.name === '_extracted_at') s!.add(i);
      });
      this.skipColumns.set(schema.name, s);
    }
    return s;
  }
}

/** JSON with object keys sorted, so equal settings give equal text whatever order they were built in. */
function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    const keys = Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`).join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}
