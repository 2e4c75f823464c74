import { createGzip } from 'node:zlib';
import { pipeline } from 'node:stream/promises';
import type { Writable } from 'node:stream';
import type { Row, TableSchema } from '../table.ts';
import { declaredColumns } from './extra.ts';
import { endStream, writeChunk } from './write-stream.ts';
import { TextBytes } from './text-bytes.ts';
import type { Format, FormatOptions, FormatWriter } from './types.ts';
import { longestRow, type EncodedChunk } from './chunk.ts';

/**
 * One JSON object per line: declared columns in schema order (nulls written), then undeclared
 * (drift) fields as their own keys. `_extra` is not written: in NDJSON drift needs no folding.
 */
export function ndjsonSerializer(schema: TableSchema): (row: Row) => string {
  const { columns, isDeclared } = declaredColumns(schema);
  const names = columns.map((c) => c.name);
  const prefixes = names.map((n, i) => (i === 0 ? '{' : ',') + JSON.stringify(n) + ':');
  const n = names.length;
  return (row) => {
    // Rows from the flattener already hold the declared keys in schema order, then drift:
    // then the engine's own JSON.stringify is the fastest correct answer.
    let i = 0;
    let inOrder = true;
    for (const k in row) {
      if (i < n && k !== names[i]) {
        inOrder = false;
        break;
      }
      i++;
    }
    if (inOrder && i >= n) return JSON.stringify(row);
    let s = '';
    for (let i = 0; i < names.length; i++) {
      const v = row[names[i]];
      s += prefixes[i] + (v === undefined ? 'null' : JSON.stringify(v));
    }
    for (const k in row) {
      if (isDeclared.has(k)) continue;
      s += (s === '' ? '{' : ',') + JSON.stringify(k) + ':' + JSON.stringify(row[k]);
    }
    return s === '' ? '{}' : s + '}';
  };
}

class NdjsonWriter implements FormatWriter {
  rowsWritten = 0;
  bytesWritten = 0;
  maxLineBytes = 0;
  private readonly line: (row: Row) => string;
  private readonly target: Writable;
  private readonly done: Promise<void>;

  constructor(
    schema: TableSchema,
    private readonly out: Writable,
    gzip: boolean,
  ) {
    this.line = ndjsonSerializer(schema);
    if (gzip) {
      const gz = createGzip();
      gz.on('data', (b: Buffer) => (this.bytesWritten += b.length));
      this.target = gz;
      // pipeline: an error on either side destroys both, so a pending write rejects, never hangs
      this.done = pipeline(gz, out);
      this.done.catch(() => {}); // observed in write()/finish(); never an unhandled rejection meanwhile
    } else {
      this.target = out;
      this.done = Promise.resolve();
    }
  }

  private sizeHint = 64 * 1024;

  async write(rows: Row[]): Promise<void> {
    if (rows.length === 0) return;
    const text = new TextBytes(this.sizeHint);
    for (const r of rows) text.append(this.line(r) + '\n');
    if (text.longest > this.maxLineBytes) this.maxLineBytes = text.longest;
    const buf = text.take();
    this.sizeHint = Math.ceil(buf.length * 1.25);
    if (this.target === this.out) this.bytesWritten += buf.length;
    this.rowsWritten += rows.length;
    await writeChunk(this.target, buf);
  }

  async writeEncoded(chunk: EncodedChunk): Promise<void> {
    if (chunk.kind !== 'text') throw new Error('ndjson: expected text rows');
    if (chunk.rows === 0) return;
    const longest = longestRow(chunk);
    if (longest > this.maxLineBytes) this.maxLineBytes = longest;
    const buf = Buffer.from(chunk.bytes.buffer, chunk.bytes.byteOffset, chunk.bytes.byteLength);
    if (this.target === this.out) this.bytesWritten += buf.length;
    this.rowsWritten += chunk.rows;
    await writeChunk(this.target, buf);
  }

  async finish(): Promise<void> {
    if (this.target === this.out) await endStream(this.out);
    else {
      this.target.end();
      await this.done;
    }
  }
}

export const ndjson = {
  name: 'ndjson',
  workersToGain: 2,
  extension: (opts: FormatOptions) => (opts.gzip ? 'ndjson.gz' : 'ndjson'),
  open: (schema: TableSchema, out: Writable, opts: FormatOptions) => new NdjsonWriter(schema, out, opts.gzip === true),
} as const satisfies Format;
