/**
 * What the decoder knew about a page when it parsed it, kept beside the parsed records (by
 * identity, so nothing is added to the records themselves): whether its bytes could hold a lone
 * surrogate at all (well-formed.ts) and how many bytes it had (loader-limits.ts). Later stages
 * skip per-value work a page cannot need; records nobody marked are simply walked.
 */
export interface PageMarks {
  /** no lone surrogate can be in the records */
  clean: boolean;
  /** decompressed bytes of the page the records came from */
  bytes?: number;
}

const marks = new WeakMap<readonly unknown[], PageMarks>();

export function markPage(records: readonly unknown[], m: PageMarks): void {
  marks.set(records, m);
}

export function pageMarks(records: readonly unknown[]): PageMarks | undefined {
  return marks.get(records);
}

/** After the records were walked and cleaned. */
export function markClean(records: readonly unknown[]): void {
  const m = marks.get(records);
  if (m) m.clean = true;
  else marks.set(records, { clean: true });
}

/** `to` (records taken from `from`, e.g. a window's duplicates dropped) keeps what was known of `from`. */
export function inheritMarks(from: readonly unknown[], to: readonly unknown[]): void {
  const m = marks.get(from);
  if (m) marks.set(to, { ...m });
}
