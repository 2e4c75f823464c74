/**
 * Thrift compact protocol, only what a Parquet writer needs: structs of i32/i64/bool/binary
 * fields, lists of those, and nested structs. A struct is written from an array of
 * [field id, value] pairs in ascending id order; `undefined` values are skipped (optional fields).
 * Reference: the Thrift compact protocol spec (field header = delta << 4 | type, zigzag varints).
 */

const T_TRUE = 1;
const T_FALSE = 2;
const T_I32 = 5;
const T_I64 = 6;
const T_BINARY = 8;
const T_LIST = 9;
const T_STRUCT = 12;

/** A 64-bit integer field (JS number: our values are below 2^53). */
export class I64 {
  constructor(readonly value: number) {}
}

export type ThriftValue = number | I64 | boolean | string | Buffer | ThriftStruct | ThriftList;
export type ThriftStruct = { fields: [number, ThriftValue | undefined][] };
export type ThriftList = { list: ThriftValue[] };

export const struct = (...fields: [number, ThriftValue | undefined][]): ThriftStruct => ({ fields });
export const list = (items: ThriftValue[]): ThriftList => ({ list: items });
export const i64 = (n: number): I64 => new I64(n);

/** Growable byte buffer for thrift output (small: headers and footers). */
class Out {
  buf = Buffer.allocUnsafe(256);
  n = 0;
  byte(b: number): void {
    if (this.n === this.buf.length) this.grow(1);
    this.buf[this.n++] = b;
  }
  bytes(b: Buffer): void {
    if (this.n + b.length > this.buf.length) this.grow(b.length);
    b.copy(this.buf, this.n);
    this.n += b.length;
  }
  private grow(k: number): void {
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.n + k));
    this.buf.copy(next, 0, 0, this.n);
    this.buf = next;
  }
  /** Unsigned varint of a non-negative integer up to 2^53 (no 32-bit bit operations). */
  varint(v: number): void {
    while (v >= 0x80) {
      this.byte((v % 0x80) + 0x80);
      v = Math.floor(v / 0x80);
    }
    this.byte(v);
  }
  zigzag(v: number): void {
    this.varint(v >= 0 ? v * 2 : -v * 2 - 1);
  }
}

function typeOf(v: ThriftValue): number {
  if (typeof v === 'number') return T_I32;
  if (v instanceof I64) return T_I64;
  if (typeof v === 'boolean') return v ? T_TRUE : T_FALSE;
  if (typeof v === 'string' || Buffer.isBuffer(v)) return T_BINARY;
  if ('list' in v) return T_LIST;
  return T_STRUCT;
}

function writeValue(o: Out, v: ThriftValue, inList: boolean): void {
  if (typeof v === 'number') o.zigzag(v);
  else if (v instanceof I64) o.zigzag(v.value);
  else if (typeof v === 'boolean') {
    if (inList) o.byte(v ? 1 : 2); // in a struct field the value is in the field's type
  } else if (typeof v === 'string' || Buffer.isBuffer(v)) {
    const b = typeof v === 'string' ? Buffer.from(v, 'utf8') : v;
    o.varint(b.length);
    o.bytes(b);
  } else if ('list' in v) {
    const items = v.list;
    const et = items.length ? typeOf(items[0]!) : T_STRUCT;
    const elemType = et === T_TRUE ? T_FALSE : et;
    if (items.length < 15) o.byte((items.length << 4) | elemType);
    else {
      o.byte(0xf0 | elemType);
      o.varint(items.length);
    }
    for (const item of items) writeValue(o, item, true);
  } else writeStruct(o, v);
}

function writeStruct(o: Out, s: ThriftStruct): void {
  let last = 0;
  for (const [id, v] of s.fields) {
    if (v === undefined) continue;
    const delta = id - last;
    if (delta <= 0) throw new Error(`thrift: field ids must ascend (${id} after ${last})`);
    const t = typeOf(v);
    if (delta <= 15) o.byte((delta << 4) | t);
    else {
      o.byte(t);
      o.zigzag(id);
    }
    writeValue(o, v, false);
    last = id;
  }
  o.byte(0); // STOP
}

/** Serialises one struct. */
export function encodeStruct(s: ThriftStruct): Buffer {
  const o = new Out();
  writeStruct(o, s);
  return o.buf.subarray(0, o.n);
}
