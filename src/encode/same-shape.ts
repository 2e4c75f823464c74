/**
 * Equality of parsed JSON values, compiled per shape: for an object whose keys (in order) and
 * nested objects are known, a function that checks another value has the same keys in the same
 * order and the same values, in straight-line code (one for-in over the other's keys, then one
 * comparison per field), instead of a generic walk that lists keys into arrays on every call.
 * Used by the child memo (child-memo.ts) on every occurrence of an embedded person.
 */

export type SameAs = (a: unknown, b: unknown) => boolean;

/** Deep equality of JSON values, key order included (it decides the order of drift fields). */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    if (a.length !== bb.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i], bb[i])) return false;
    return true;
  }
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  for (let i = 0; i < ka.length; i++) {
    const k = ka[i]!;
    if (k !== kb[i] || !sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])) return false;
  }
  return true;
}

/** The shape of a value: its keys in order, and the shape of each object under them (arrays and scalars are leaves). */
type Shape = [string, Shape | 0][];

function shapeOf(o: Record<string, unknown>): Shape | undefined {
  const out: Shape = [];
  for (const k in o) {
    // own-property reads of these would not be plain reads in generated code
    if (k === '__proto__' || k === 'constructor') return undefined;
    const v = o[k];
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) {
      const s = shapeOf(v as Record<string, unknown>);
      if (!s) return undefined;
      out.push([k, s]);
    } else out.push([k, 0]);
  }
  return out;
}

const compiled = new Map<string, SameAs>();
const MAX_SHAPES = 1000;

/**
 * A comparator for values shaped like `a` (an object): `same(a, b)` is sameJson(a, b) for that `a`
 * (and for any other value of the same shape). Generic for anything else.
 */
export function sameAsFor(a: unknown): SameAs {
  if (typeof a !== 'object' || a === null || Array.isArray(a)) return sameJson;
  const shape = shapeOf(a as Record<string, unknown>);
  if (!shape) return sameJson;
  const key = JSON.stringify(shape);
  let fn = compiled.get(key);
  if (!fn) {
    if (compiled.size >= MAX_SHAPES) compiled.clear();
    fn = compile(shape);
    compiled.set(key, fn);
  }
  return fn;
}

function compile(shape: Shape): SameAs {
  const keyLists: string[][] = [];
  let vars = 0;
  const objectCheck = (s: Shape, a: string, b: string): string => {
    keyLists.push(s.map(([k]) => k));
    const list = `KEYS[${keyLists.length - 1}]`;
    const lines = [
      `if (typeof ${b} !== 'object' || ${b} === null || Array.isArray(${b})) return false;`,
      `{ let i = 0; for (const k in ${b}) { if (k !== ${list}[i]) return false; i++; } if (i !== ${s.length}) return false; }`,
    ];
    for (const [k, sub] of s) {
      const prop = JSON.stringify(k);
      if (sub === 0) {
        // a scalar in `a`; an array there compares as JSON
        lines.push(
          `{ const x = ${a}[${prop}], y = ${b}[${prop}]; if (x !== y && !(typeof x === 'object' && x !== null && SAME(x, y))) return false; }`,
        );
      } else {
        const x = `a${vars++}`;
        const y = `b${vars++}`;
        lines.push(`{ const ${x} = ${a}[${prop}], ${y} = ${b}[${prop}];`, objectCheck(sub, x, y), '}');
      }
    }
    return lines.join('\n');
  };
  const body = `${objectCheck(shape, 'a', 'b')}\nreturn true;`;
  // generated from the keys of parsed JSON, each written as a JSON string literal
  const make = new Function('KEYS', 'SAME', `return function sameShape(a, b) {\n${body}\n};`) as (keys: string[][], same: SameAs) => SameAs;
  return make(keyLists, sameJson);
}
