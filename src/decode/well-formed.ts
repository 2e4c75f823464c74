/**
 * One rule for text in every format (docs/flattening.md, "Text"): a lone UTF-16 surrogate (half
 * of an emoji cut by a field limit) becomes U+FFFD before anything is flattened or encoded, so
 * NDJSON (whose JSON.stringify would write a "\ud83d" escape that DuckDB and BigQuery refuse),
 * CSV and Parquet all hold the same well-formed text, and every replacement is counted per table.
 *
 * Cost: JSON text can only produce a lone surrogate from a `\uD800`-`\uDFFF` escape, so a page
 * whose bytes hold no `\ud` / `\uD` is marked clean when it is parsed (decode/buffered.ts) and
 * never walked; only pages that may hold one (and records from elsewhere: streamed pages, hand-made
 * rows) are walked, with the engine's native isWellFormed on each string.
 */

import { markClean, pageMarks } from './page-marks.ts';

type WellFormed = string & { isWellFormed(): boolean; toWellFormed(): string };

/** Whether decoded JSON bytes may produce a lone surrogate when parsed. */
export function mayHoldLoneSurrogates(json: Uint8Array): boolean {
  const b = Buffer.isBuffer(json) ? json : Buffer.from(json.buffer, json.byteOffset, json.byteLength);
  return b.indexOf('\\ud') >= 0 || b.indexOf('\\uD') >= 0;
}

/** Whether the records are known to hold well-formed text only (no walk needed). */
export function isClean(records: readonly unknown[]): boolean {
  return pageMarks(records)?.clean === true;
}

/** Lone surrogates in a string (0 for well-formed text). */
function loneSurrogates(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0xd800 || c > 0xdfff) continue;
    const next = i + 1 < s.length ? s.charCodeAt(i + 1) : 0;
    if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) i++;
    else n++;
  }
  return n;
}

/** Where replacements are counted: the table a value ends up in. */
export interface SurrogateScope {
  /** the resource's own table */
  table: string;
  /** include name -> child table (the include's items are counted there) */
  includes: ReadonlyMap<string, string>;
  /** declared fields written as one JSON text column (a loader limit applies to the whole value) */
  json?: ReadonlySet<string>;
}

/**
 * Replaces every lone surrogate in the records (values and keys, at any depth) by U+FFFD, in
 * place, and adds the number replaced to `counts` under the table each value belongs to.
 * Skips record arrays marked clean. Returns whether anything was replaced.
 */
export function replaceLoneSurrogates(records: readonly unknown[], scope: SurrogateScope, counts: Map<string, number>): boolean {
  if (isClean(records)) return false;
  let any = false;
  const count = (table: string, n: number) => {
    counts.set(table, (counts.get(table) ?? 0) + n);
    any = true;
  };
  const fix = (v: unknown, table: string): unknown => {
    if (typeof v === 'string') {
      if ((v as WellFormed).isWellFormed()) return v;
      count(table, loneSurrogates(v));
      return (v as WellFormed).toWellFormed();
    }
    if (typeof v !== 'object' || v === null) return v;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) v[i] = fix(v[i], table);
      return v;
    }
    return fixObject(v as Record<string, unknown>, () => table);
  };
  const fixObject = (o: Record<string, unknown>, tableOf: (key: string) => string): Record<string, unknown> => {
    let renamed = false;
    for (const k in o) {
      o[k] = fix(o[k], tableOf(k));
      if (!(k as WellFormed).isWellFormed()) renamed = true;
    }
    if (!renamed) return o;
    // a key with a lone surrogate: the object is rebuilt, keys in their order, each fixed
    const out: Record<string, unknown> = {};
    for (const k in o) {
      let key = k;
      if (!(k as WellFormed).isWellFormed()) {
        count(tableOf(k), loneSurrogates(k));
        key = (k as WellFormed).toWellFormed();
      }
      out[key] = o[k];
    }
    return out;
  };
  const parentOf = (k: string) => scope.includes.get(k) ?? scope.table;
  const list = records as unknown[];
  for (let i = 0; i < list.length; i++) {
    const r = list[i];
    if (typeof r === 'object' && r !== null && !Array.isArray(r)) list[i] = fixObject(r as Record<string, unknown>, parentOf);
    else list[i] = fix(r, scope.table);
  }
  markClean(records);
  return any;
}

/** The counts as a plain record (manifest), or undefined when nothing was replaced. */
export function countsRecord(counts: ReadonlyMap<string, number>): Record<string, number> | undefined {
  return counts.size ? Object.fromEntries([...counts].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : undefined;
}
