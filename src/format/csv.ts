import type { Writable } from 'node:stream';
import type { ColumnDef, Row, Scalar, TableSchema } from '../table.ts';
import { EXTRA_COLUMN } from '../table.ts';
import { declaredColumns, extraJson } from './extra.ts';
import { endStream, writeChunk } from './write-stream.ts';
import { TextBytes } from './text-bytes.ts';
import type { Format, FormatOptions, FormatWriter } from './types.ts';
import { longestRow, type EncodedChunk } from './chunk.ts';

/**
 * RFC 4180 CSV: CRLF line ends, a header row of the schema's columns (with `_extra` last), fields
 * quoted when they hold a comma, quote, CR or LF (quotes doubled). null is an empty field, an
 * empty string is `""` so the two stay distinct. Booleans true/false, timestamps ISO 8601 Z.
 *
 * csvFormulaGuard (default off): text cells starting with = + - @ TAB or CR get a leading `'`,
 * so a spreadsheet shows them as text instead of evaluating a formula. It changes the data
 * (a text "-5" becomes "'-5"), hence opt-in; numbers, booleans and timestamps are never touched.
 */
const NEEDS_QUOTES = /[",\r\n]/;
const FORMULA_START = /^[=+\-@\t\r]/;

export function csvText(s: string, guard: boolean): string {
  if (guard && FORMULA_START.test(s)) s = "'" + s;
  if (s === '') return '""';
  return NEEDS_QUOTES.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
}

/** One CSV field of a column value (exported for the generated serialisers in src/encode/). */
export function csvCell(v: Scalar | undefined, col: ColumnDef | null, guard: boolean): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'string') return csvText(v, guard && (col === null || col.type === 'string' || col.type === 'json'));
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : '';
  return v ? 'true' : 'false';
}

/** Header line and a row encoder for one schema. */
export function csvEncoder(schema: TableSchema, guard: boolean): { header: string; line: (row: Row) => string } {
  const { columns, isDeclared } = declaredColumns(schema);
  const header = [...columns.map((c) => csvText(c.name, false)), EXTRA_COLUMN.name].join(',') + '\r\n';
  return {
    header,
    line(row) {
      let s = '';
      for (let i = 0; i < columns.length; i++) s += csvCell(row[columns[i].name], columns[i], guard) + ',';
      const extra = extraJson(row, isDeclared);
      return s + (extra === null ? '' : csvText(extra, guard)) + '\r\n';
    },
  };
}

class CsvWriter implements FormatWriter {
  rowsWritten = 0;
  bytesWritten = 0;
  maxLineBytes = 0;
  private readonly enc: ReturnType<typeof csvEncoder>;
  private headerDone = false;

  constructor(
    schema: TableSchema,
    private readonly out: Writable,
    guard: boolean,
  ) {
    this.enc = csvEncoder(schema, guard);
  }

  private sizeHint = 64 * 1024;

  async write(rows: Row[]): Promise<void> {
    if (rows.length === 0 && this.headerDone) return;
    const text = new TextBytes(this.sizeHint);
    if (!this.headerDone) {
      text.append(this.enc.header);
      this.headerDone = true;
    }
    for (const r of rows) text.append(this.enc.line(r));
    if (text.longest > this.maxLineBytes) this.maxLineBytes = text.longest;
    this.rowsWritten += rows.length;
    const buf = text.take();
    this.sizeHint = Math.ceil(buf.length * 1.25);
    this.bytesWritten += buf.length;
    await writeChunk(this.out, buf);
  }

  async writeEncoded(chunk: EncodedChunk): Promise<void> {
    if (chunk.kind !== 'text') throw new Error('csv: expected text rows');
    if (chunk.rows === 0) return this.write([]);
    let buf = Buffer.from(chunk.bytes.buffer, chunk.bytes.byteOffset, chunk.bytes.byteLength);
    if (!this.headerDone) {
      const header = Buffer.from(this.enc.header);
      if (header.length > this.maxLineBytes) this.maxLineBytes = header.length;
      buf = Buffer.concat([header, buf]);
      this.headerDone = true;
    }
    const longest = longestRow(chunk);
    if (longest > this.maxLineBytes) this.maxLineBytes = longest;
    this.rowsWritten += chunk.rows;
    this.bytesWritten += buf.length;
    await writeChunk(this.out, buf);
  }

  async finish(): Promise<void> {
    if (!this.headerDone) await this.write([]); // an empty table still has its header
    await endStream(this.out);
  }
}

export const csv = {
  name: 'csv',
  workersToGain: 2,
  extension: () => 'csv',
  open: (schema: TableSchema, out: Writable, opts: FormatOptions) => new CsvWriter(schema, out, opts.csvFormulaGuard === true),
} as const satisfies Format;
