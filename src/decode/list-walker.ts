import Assembler from 'stream-json/assembler.js';
import type { parser } from 'stream-json';
import { badBody, toPageMeta, type PageMeta } from './types.ts';

type Token = parser.Token;

/**
 * Turns the token stream of one list response into rows, one at a time, and its meta.
 * Only one `data` item is ever assembled at once, so memory is bounded by the largest row,
 * not by the page. Rows collect in `rows`; the caller takes them between chunks.
 */
export class ListWalker {
  private readonly asm = new Assembler();
  /** Nesting inside the top-level object: 0 before it, 1 inside it, 2 inside `data` when it is an array. */
  private level = 0;
  /** Open objects/arrays in the value being assembled. */
  private valueDepth = 0;
  private assembling: 'row' | 'member' | undefined;
  private key: string | undefined;
  private finished = false;
  private sawData = false;
  private readonly members: Record<string, unknown> = {};

  rows: unknown[] = [];

  /** Hands over the rows collected so far. */
  take(): unknown[] {
    const out = this.rows;
    this.rows = [];
    return out;
  }

  get complete(): boolean {
    return this.finished;
  }

  meta(): PageMeta | undefined {
    return toPageMeta(this.members.meta);
  }

  feed(tokens: readonly Token[]): void {
    for (let i = 0; i < tokens.length; i++) {
      const t = tokens[i];
      if (this.assembling !== undefined) this.assemble(t);
      else this.structure(t);
    }
  }

  /** Tokens of the document's frame: the top-level object, its keys, the `data` array bounds. */
  private structure(t: Token): void {
    if (this.finished) throw badBody('unexpected content after the top-level object');
    if (this.level === 0) {
      if (t.name !== 'startObject') throw badBody('expected a JSON object with a "data" member');
      this.level = 1;
      return;
    }
    if (this.level === 2) {
      if (t.name === 'endArray') {
        this.level = 1;
        return;
      }
      this.startValue('row', t);
      return;
    }
    // level 1: keys and member values of the top-level object
    if (t.name === 'keyValue') {
      this.key = t.value;
      return;
    }
    if (t.name === 'endObject') {
      if (!this.sawData) throw badBody('"data" is missing');
      this.finished = true;
      this.level = 0;
      return;
    }
    if (this.key === 'data') {
      this.sawData = true;
      if (t.name === 'startArray') {
        this.level = 2;
        return;
      }
      if (t.name !== 'startObject') throw badBody('"data" is not an array or object');
      this.startValue('row', t); // {data: {...}}: the single object is the one row
      return;
    }
    this.startValue('member', t);
  }

  private startValue(kind: 'row' | 'member', t: Token): void {
    this.assembling = kind;
    this.valueDepth = 0;
    this.assemble(t);
  }

  private assemble(t: Token): void {
    this.asm.consume(t);
    const name = t.name;
    if (name === 'startObject' || name === 'startArray') this.valueDepth++;
    else if (name === 'endObject' || name === 'endArray') this.valueDepth--;
    else if (name === 'keyValue') return;
    if (this.valueDepth !== 0) return;
    const value = this.asm.current;
    if (this.assembling === 'row') this.rows.push(value);
    else this.members[this.key as string] = value;
    this.assembling = undefined;
    this.asm.current = null;
  }
}
