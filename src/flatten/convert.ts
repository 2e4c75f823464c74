import type { FieldType } from '../resources/types.ts';
import type { Scalar } from '../table.ts';

/** Returned when a value does not fit its declared type: the column stays null, the raw value is kept as drift. */
export const MISMATCH = Symbol('mismatch');
export type Converted = Scalar | typeof MISMATCH;
export type Converter = (v: unknown) => Converted;

const INT_RE = /^-?\d{1,15}$/;
const NUM_RE = /^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/;

const toString: Converter = (v) => (typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : MISMATCH);

const toInteger: Converter = (v) => {
  if (typeof v === 'number') return Number.isSafeInteger(v) ? v : MISMATCH;
  if (typeof v === 'string' && INT_RE.test(v)) return Number(v);
  return MISMATCH;
};

const toDouble: Converter = (v) => {
  if (typeof v === 'number') return Number.isFinite(v) ? v : MISMATCH;
  if (typeof v === 'string' && NUM_RE.test(v)) return Number(v);
  return MISMATCH;
};

const toBoolean: Converter = (v) => {
  if (typeof v === 'boolean') return v;
  if (v === 1 || v === '1' || v === 'true') return true;
  if (v === 0 || v === '0' || v === 'false') return false;
  return MISMATCH;
};

/** string or integer, decimal text: numbers become their decimal text, strings stay as they are. */
const toText: Converter = (v) => (typeof v === 'string' ? v : typeof v === 'number' && Number.isFinite(v) ? String(v) : MISMATCH);

const toJson: Converter = (v) => JSON.stringify(v);

/** Scalars of unspecified type: JSON text keeps 5 and "5" apart. Objects/arrays are a mismatch. */
const toJsonScalar: Converter = (v) => (typeof v === 'object' ? MISMATCH : JSON.stringify(v));

export const CONVERTERS: Record<Exclude<FieldType, 'datetime'>, Converter> = {
  string: toString,
  integer: toInteger,
  double: toDouble,
  boolean: toBoolean,
  string_or_integer: toText,
  decimal_text: toText,
  json: toJson,
  any_scalar: toJsonScalar,
};

/** How a raw value that cannot be a column value is kept as drift: scalars as is, others as JSON text. */
export function rawScalar(v: unknown): Scalar {
  if (v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return v;
  return JSON.stringify(v) ?? null;
}
