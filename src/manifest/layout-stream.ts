import type { Manifest, ManifestTask } from './types.ts';

/**
 * Large documents (run manifests of earlier versions, which repeated every task of a run: about
 * 5 KB per school, 50 MB at 10,000 schools) are read without parsing them whole: a scan of the
 * bytes finds the top-level members and the elements of `tasks`, and each element is parsed on
 * its own, so memory holds the bytes and one batch of tasks rather than the whole run as objects.
 * (A streaming JSON parser does the same at a few MB/s; the scan, which only tracks strings and
 * nesting, runs at hundreds.) Structural characters are ASCII, so scanning UTF-8 bytes is exact.
 */
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN = new Set([0x7b, 0x5b]); // { [
const CLOSE = new Set([0x7d, 0x5d]); // } ]
const COMMA = 0x2c;
const COLON = 0x3a;

/** Byte ranges [start, end) of the values at depth `depth` separated by commas within [from, to). */
function* elements(buf: Buffer, from: number, to: number): Generator<[number, number]> {
  let depth = 0;
  let inString = false;
  let start = from;
  for (let i = from; i < to; i++) {
    const c = buf[i]!;
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (OPEN.has(c)) depth++;
    else if (CLOSE.has(c)) depth--;
    else if (c === COMMA && depth === 0) {
      yield [start, i];
      start = i + 1;
    }
  }
  if (depth !== 0 || inString) throw new Error('unbalanced JSON');
  if (buf.subarray(start, to).toString('latin1').trim() !== '') yield [start, to];
}

/** The top-level members of a JSON object: key -> byte range of its value. */
function members(buf: Buffer): Map<string, [number, number]> {
  let from = 0;
  let to = buf.length;
  while (from < to && buf[from] !== 0x7b) from++;
  while (to > from && buf[to - 1] !== 0x7d) to--;
  if (from >= to) throw new Error('not a JSON object');
  const out = new Map<string, [number, number]>();
  for (const [s, e] of elements(buf, from + 1, to - 1)) {
    let colon = -1;
    let inString = false;
    for (let i = s; i < e; i++) {
      const c = buf[i]!;
      if (inString) {
        if (c === BACKSLASH) i++;
        else if (c === QUOTE) inString = false;
      } else if (c === QUOTE) inString = true;
      else if (c === COLON) {
        colon = i;
        break;
      }
    }
    if (colon < 0) throw new Error('a member without a value');
    out.set(JSON.parse(buf.toString('utf8', s, colon)) as string, [colon + 1, e]);
  }
  return out;
}

/** The document without its `tasks` and `deletions`, and a reader of its tasks `batch` at a time. */
export function scanDocument(buf: Buffer): { header: Partial<Manifest>; tasks: (batch: number) => Generator<ManifestTask[]> } {
  const m = members(buf);
  const header = Object.fromEntries(
    [...m].filter(([k]) => k !== 'tasks' && k !== 'deletions').map(([k, [s, e]]) => [k, JSON.parse(buf.toString('utf8', s, e))]),
  ) as Partial<Manifest>;
  const range = m.get('tasks');
  return {
    header,
    *tasks(batch: number) {
      if (!range) return;
      let [s, e] = range;
      while (s < e && buf[s] !== 0x5b) s++;
      while (e > s && buf[e - 1] !== 0x5d) e--;
      if (s >= e) throw new Error('tasks is not an array');
      let out: ManifestTask[] = [];
      for (const [a, b] of elements(buf, s + 1, e - 1)) {
        out.push(JSON.parse(buf.toString('utf8', a, b)) as ManifestTask);
        if (out.length >= batch) {
          yield out;
          out = [];
        }
      }
      if (out.length) yield out;
    },
  };
}
