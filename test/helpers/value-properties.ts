/**
 * Property checks of issue 25 item 4: generated values (text over every Unicode plane with lone
 * surrogates, control characters, BOMs and line separators; numbers at the edges of each type;
 * nested objects and arrays where scalars are declared; nulls) are set into sandbox records through
 * the control API, exported in every format, loaded into DuckDB by `warehouse load` and by the
 * DuckDB rendering of the static plan, and compared with what the sandbox holds, through the
 * documented normalisations only (docs/flattening.md, "Column rules", "Schema drift", "Text").
 *
 * The oracle below is written from those docs, not from src/flatten: it knows only the types the
 * generated fields are declared with (achievements' string, integer and boolean columns; the drift
 * of undeclared fields and of included students' fields).
 *
 * Used by test/integration/value-properties.test.ts (a seed or two, in `npm test`) and by the
 * bench's `properties` section (many seeds). `PROPERTY_SEED` picks the first seed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { resolveRunConfig } from '../../src/config/resolve.ts';
import { runExport } from '../../src/pipeline/run.ts';
import { startSandbox } from '../../src/sandbox/index.ts';
import { builtinTables, warehouseLoad } from '../../src/warehouse/commands.ts';
import { runStaticScript } from '../warehouse/fixtures.ts';

export type Format = 'ndjson' | 'csv' | 'parquet';
export const FORMATS: readonly Format[] = ['ndjson', 'csv', 'parquet'];
export type Loader = 'warehouse load' | 'static plan';

/** mulberry32: a small seeded PRNG (32-bit state), enough to make every round reproducible. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Rand = () => number;
const int = (r: Rand, n: number) => Math.floor(r() * n);
const pick = <T>(r: Rand, xs: readonly T[]): T => xs[int(r, xs.length)]!;
/** String.prototype.toWellFormed (Node 20+; not in the compiler's ES2022 lib). */
const toWellFormed = (s: string): string => (s as string & { toWellFormed(): string }).toWellFormed();

/** Characters that have broken writers and readers somewhere: quoting, line ends, escapes, invisible marks. */
const AWKWARD = [
  ',',
  '"',
  "'",
  '\\',
  '\r',
  '\n',
  '\r\n',
  '\t',
  '\0',
  '\x07',
  '\x1b',
  '\x7f',
  '\x85',
  '\x9f',
  '\ufeff',
  '\u2028',
  '\u2029',
  '\u202e',
  '\u200b',
  '\ufffd',
  '\ufffe',
  '\uffff',
  '=',
  '-',
  '+',
  '@',
  'null',
  'NULL',
  '\\N',
  'true',
  '0',
  '-5',
  '00012',
  '1e5',
  '{}',
  '[]',
  '{"a":1}',
  ' ',
  '',
];

/** One code point from a plane: 0 (the BMP without surrogates) to 16, both ends of each included. */
function codePoint(r: Rand): string {
  const plane = int(r, 17);
  if (plane === 0) {
    const cp = int(r, 0xf800); // 0x0000-0xF7FF, then the part above the surrogates
    return String.fromCodePoint(cp < 0xd800 ? cp : cp + 0x800);
  }
  const low = pick(r, [0, 0xfffe, 0xffff, int(r, 0x10000)]);
  return String.fromCodePoint(plane * 0x10000 + low);
}

/** A lone high or low surrogate (half an emoji), or a whole pair. */
function surrogate(r: Rand): string {
  const hi = String.fromCharCode(0xd800 + int(r, 0x400));
  const lo = String.fromCharCode(0xdc00 + int(r, 0x400));
  return pick(r, [hi, lo, hi + lo, lo + hi, hi + hi]);
}

/** Text of up to `max` pieces mixing every kind above. */
export function genText(r: Rand, max = 24): string {
  const n = int(r, max + 1);
  let s = '';
  for (let i = 0; i < n; i++) {
    const k = r();
    if (k < 0.3) s += pick(r, AWKWARD);
    else if (k < 0.45) s += surrogate(r);
    else if (k < 0.55) s += String.fromCharCode(int(r, 0x20));
    else if (k < 0.8) s += codePoint(r);
    else s += 'abc XYZ 123 éß 中文 🌟'.slice(int(r, 10), 10 + int(r, 10));
  }
  return s;
}

/** Text of about `bytes` UTF-8 bytes (lone surrogates and awkward characters included). */
export function genLongText(r: Rand, bytes: number): string {
  const piece = genText(r, 40) + 'x'.repeat(200) + '"\r\n,\u2028\ud83d';
  const unit = Buffer.byteLength(toWellFormed(piece));
  return piece.repeat(Math.ceil(bytes / Math.max(unit, 1)));
}

const MAX = Number.MAX_SAFE_INTEGER;
/** Numbers at the edges of the integer and double types; some fit an integer column, most do not. */
const NUMBERS = [0, -0, 1, -1, 2 ** 31, -(2 ** 31) - 1, MAX, -MAX, MAX + 1, 2 ** 63, 1e300, -1e300, 5e-324, 0.1, 1.5, -2.5e-7, 1e21];
/** Integers sent as text: up to 15 digits read as numbers, longer ones (2^53 + 1) do not fit. */
const NUMERIC_TEXT = ['42', '-7', '000000000000042', '123456789012345', '9007199254740993', '1e3', '1.0', '', ' 1', '0x10'];
const BOOLEANS = [true, false, 1, 0, '1', '0', 'true', 'false', 'yes', 2, 'TRUE'];

/** Keys inside undeclared objects: they become column names in _extra (a lone surrogate in a key too). */
const NESTED_KEYS = ['a', 'b', 'c_d', 'x1', 'zz', 'é', 'sp ace', '\udc00k', 'emoji🌟'];

/** Nested objects and arrays, possibly holding text and numbers of the kinds above. */
function genNested(r: Rand, depth = 0): unknown {
  if (depth > 2 || r() < 0.3) return pick(r, [genText(r, 4), pick(r, NUMBERS), null, true, []]);
  if (r() < 0.4) return Array.from({ length: int(r, 4) }, () => genNested(r, depth + 1));
  const o: Record<string, unknown> = {};
  for (let i = int(r, 4); i > 0; i--) o[pick(r, NESTED_KEYS)] = genNested(r, depth + 1);
  return o;
}

function genFor(r: Rand, type: 'string' | 'integer' | 'boolean'): unknown {
  const k = r();
  if (k < 0.1) return null;
  if (k < 0.2) return genNested(r);
  if (k < 0.3) return pick(r, NUMBERS);
  if (type === 'string') return k < 0.4 ? pick(r, BOOLEANS) : genText(r);
  if (type === 'integer') return k < 0.6 ? pick(r, NUMERIC_TEXT) : k < 0.7 ? genText(r, 3) : pick(r, NUMBERS);
  return k < 0.8 ? pick(r, BOOLEANS) : genText(r, 3);
}

/** Achievements' declared columns the rounds set, by type. */
const DECLARED = {
  comment: 'string',
  class: 'string',
  subject: 'string',
  points: 'integer',
  total_points: 'integer',
  parents_notified: 'boolean',
} as const;
type Declared = keyof typeof DECLARED;

/** A patch for one achievement: declared columns of each type, and undeclared fields. */
export function genPatch(r: Rand): Record<string, unknown> {
  const p: Record<string, unknown> = {};
  for (const [col, type] of Object.entries(DECLARED)) if (r() < 0.8) p[col] = genFor(r, type);
  for (let i = int(r, 3); i > 0; i--)
    p[`x_${pick(r, ['note', 'extra', 'mis_ref', 'tags'])}`] = r() < 0.5 ? genNested(r) : genFor(r, 'string');
  return p;
}

// --- the oracle: docs/flattening.md --------------------------------------------------------

/** "Text": lone surrogates become U+FFFD, in values and keys, at any depth. */
export function wellFormed(v: unknown): unknown {
  if (typeof v === 'string') return toWellFormed(v);
  if (Array.isArray(v)) return v.map(wellFormed);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [toWellFormed(k), wellFormed(x)]));
  return v;
}

/** Lone surrogates in every string and key of a value (what the export counts as replaced). */
export function loneSurrogates(v: unknown): number {
  if (typeof v === 'string') return v.match(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g)?.length ?? 0;
  if (Array.isArray(v)) return v.reduce((n: number, x) => n + loneSurrogates(x), 0);
  if (v && typeof v === 'object') return Object.entries(v).reduce((n, [k, x]) => n + loneSurrogates(k) + loneSurrogates(x), 0);
  return 0;
}

const MISMATCH = Symbol('mismatch');
/** "Column rules": integer / boolean accept numeric strings and 0/1, "true"/"false"; text takes numbers and booleans as their text. */
function convert(v: unknown, type: 'string' | 'integer' | 'boolean'): unknown {
  if (v === null) return null;
  if (type === 'string') return typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : MISMATCH;
  if (type === 'integer') {
    if (typeof v === 'number') return Number.isSafeInteger(v) ? v : MISMATCH;
    return typeof v === 'string' && /^-?\d{1,15}$/.test(v) ? Number(v) : MISMATCH;
  }
  if (v === true || v === 1 || v === '1' || v === 'true') return true;
  if (v === false || v === 0 || v === '0' || v === 'false') return false;
  return MISMATCH;
}

/** A raw value kept as drift: scalars as they are, objects and arrays as JSON text. */
const raw = (v: unknown) => (v === null || typeof v !== 'object' ? v : JSON.stringify(v));

/** "Schema drift": an undeclared field flattened (nested keys joined with __, arrays and {} as JSON text). */
function flattenDrift(v: unknown, name: string, out: Record<string, unknown>): void {
  if (v === null || typeof v !== 'object') out[name] = v;
  else if (Array.isArray(v)) out[name] = JSON.stringify(v);
  else {
    const keys = Object.keys(v);
    if (!keys.length) out[name] = '{}';
    for (const k of keys) flattenDrift((v as Record<string, unknown>)[k], `${name}__${k}`, out);
  }
}

export interface Expected {
  columns: Partial<Record<Declared, unknown>>;
  /** every undeclared key of the row: mismatches' <column>__raw and flattened drift */
  extra: Record<string, unknown>;
}

/** What the warehouse must hold for a record after `patch`, for the columns the patch names. */
export function expectedOf(patch: Record<string, unknown>): Expected {
  const p = wellFormed(patch) as Record<string, unknown>;
  const columns: Expected['columns'] = {};
  const extra: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(p)) {
    const type = DECLARED[k as Declared];
    if (!type) {
      flattenDrift(v, k, extra);
      continue;
    }
    const c = convert(v, type);
    columns[k as Declared] = c === MISMATCH ? null : c;
    if (c === MISMATCH) extra[`${k}__raw`] = raw(v);
  }
  return { columns, extra };
}

// --- a round ---------------------------------------------------------------------------------

export interface RoundOptions {
  seed: number;
  /** achievements given generated values (of the school's 40) */
  records?: number;
  /** students given a generated surname (drift in achievement_students) */
  students?: number;
  /** UTF-8 bytes of the one long comment; 0 for none */
  longBytes?: number;
  formats?: readonly Format[];
}

export interface RoundResult {
  /** one line per value that came back other than the oracle says, naming seed, format, loader, row and column */
  mismatches: string[];
  /** values compared */
  checked: number;
  /** lone surrogates the sandbox's records hold, by table (an included item once per row it is in) */
  surrogates: Record<string, number>;
}

/** Every row of a table in a DuckDB file, values as JavaScript (BIGINT as number, _extra parsed). */
async function tableRows(db: string, table: string): Promise<Map<string, Record<string, unknown>>> {
  const inst = await DuckDBInstance.create(db);
  const conn = await inst.connect();
  try {
    // Text is read with a character before it: the client's UTF-8 decoder drops a leading U+FEFF
    // (DuckDB holds it: strlen counts its 3 bytes), and a BOM at the start of a value is a case here.
    const text = (
      await conn.runAndReadAll(
        `SELECT column_name FROM information_schema.columns WHERE table_name = '${table}' AND data_type IN ('VARCHAR', 'JSON')`,
      )
    )
      .getRows()
      .map((c) => String(c[0]));
    const reader = await conn.runAndReadAll(
      `SELECT * REPLACE (${text.map((c) => `'|' || CAST("${c}" AS VARCHAR) AS "${c}"`).join(', ')}) FROM "${table}"`,
    );
    const out = new Map<string, Record<string, unknown>>();
    for (const row of reader.getRowObjects()) {
      const r: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(row))
        r[k] = typeof v === 'bigint' ? Number(v) : typeof v === 'string' && text.includes(k) ? v.slice(1) : v;
      out.set(`${String(r.id)}|${String(r.achievement_id ?? '')}`, r);
    }
    return out;
  } finally {
    conn.closeSync();
    inst.closeSync();
  }
}

const show = (v: unknown) =>
  typeof v === 'string' && v.length > 80 ? `${JSON.stringify(v.slice(0, 60))}... (${v.length} chars)` : JSON.stringify(v);

/** Numbers compare by value (DuckDB's JSON may write 1e300 as 1e+300 or 1.0e300); everything else exactly. */
function same(a: unknown, b: unknown): boolean {
  if (typeof a === 'number' && typeof b === 'number') return Object.is(a + 0, b + 0);
  if (Array.isArray(a) || Array.isArray(b) || (a && typeof a === 'object') || (b && typeof b === 'object'))
    return JSON.stringify(a) === JSON.stringify(b);
  return a === b;
}

export async function propertyRound(o: RoundOptions): Promise<RoundResult> {
  const r = prng(o.seed);
  const sb = await startSandbox({ seed: o.seed, schools: 1, achievementsPerSchool: 40 });
  const dir = mkdtempSync(join(tmpdir(), 'se-props-'));
  const res: RoundResult = { mismatches: [], checked: 0, surrogates: {} };
  try {
    const school = 'A1001';
    const records = sb.control.records(school, 'achievements') as { id: string; students: { data: { id: string }[] } }[];
    const want = new Map<string, Expected>(); // achievements by id
    const count = (table: string, n: number) => n && (res.surrogates[table] = (res.surrogates[table] ?? 0) + n);
    const patches = new Map<string, Record<string, unknown>>(records.slice(0, o.records ?? 16).map((rec) => [rec.id, genPatch(r)]));
    // the long comment goes to the last achievement (with what else its patch sets, when it has one)
    const last = records[records.length - 1]!.id;
    if (o.longBytes) patches.set(last, { ...patches.get(last), comment: genLongText(r, o.longBytes) });
    for (const [id, patch] of patches) {
      sb.control.update(school, 'achievements', id, patch);
      want.set(id, expectedOf(patch));
      count('achievements', loneSurrogates(patch));
    }
    // included students: their fields are all drift in achievement_students
    const kids = new Map<string, Expected>(); // student id -> the drift its surname gives
    for (const rec of records) {
      for (const s of rec.students.data) {
        if (kids.size >= (o.students ?? 4) || kids.has(s.id)) continue;
        const surname = r() < 0.7 ? genText(r) : genFor(r, 'integer');
        sb.control.update(school, 'students', s.id, { surname });
        kids.set(s.id, expectedOf({ surname }));
        const rows = records.reduce((n, a) => n + a.students.data.filter((x) => x.id === s.id).length, 0);
        count('achievement_students', rows * loneSurrogates(surname));
      }
    }

    for (const format of o.formats ?? FORMATS) {
      const dest = join(dir, format);
      const cfg = resolveRunConfig(undefined, {
        api_url: sb.url,
        domains: sb.domains,
        dest,
        progress: 'none',
        format,
        resources: ['achievements'],
      });
      const summary = await runExport(cfg, { token: sb.tokens.full });
      if (summary.status !== 'ok') {
        res.mismatches.push(`seed ${o.seed} ${format}: the export ended ${summary.status}`);
        continue;
      }
      const replaced = Object.fromEntries(
        Object.entries(summary.tables).flatMap(([t, v]) => (v.replacedSurrogates ? [[t, v.replacedSurrogates]] : [])),
      );
      const sorted = (o: Record<string, number>) => JSON.stringify(Object.entries(o).sort());
      if (sorted(replaced) !== sorted(res.surrogates))
        res.mismatches.push(
          `seed ${o.seed} ${format}: replaced surrogates ${JSON.stringify(replaced)}, the records hold ${JSON.stringify(res.surrogates)}`,
        );
      // the static scripts read Parquet only (docs/warehouse.md): other formats are loaded by `warehouse load`
      const dbs: [Loader, string][] = [['warehouse load', join(dir, `${format}-load.duckdb`)]];
      if (format === 'parquet') dbs.push(['static plan', join(dir, `${format}-script.duckdb`)]);
      for (const [loader, db] of dbs) {
        const where = `seed ${o.seed} ${format} ${loader}`;
        try {
          if (loader === 'warehouse load') await warehouseLoad({ dest, into: `duckdb:${db}`, tables: builtinTables() });
          else await runStaticScript(dest, db, builtinTables());
        } catch (e) {
          res.mismatches.push(`${where}: the load failed: ${(e as Error).message.split('\n')[0]}`);
          continue;
        }
        const parents = await tableRows(db, 'achievements');
        if (parents.size !== records.length)
          res.mismatches.push(`${where}: ${parents.size} achievements, the sandbox has ${records.length}`);
        for (const [id, exp] of want) compare(res, `${where} achievements ${id}`, parents.get(`${id}|`), exp);
        const children = await tableRows(db, 'achievement_students');
        for (const row of children.values()) {
          const exp = kids.get(String(row.id));
          if (exp) compare(res, `${where} achievement_students ${String(row.id)}`, row, exp, ['surname']);
        }
      }
    }
  } finally {
    await sb.close();
    rmSync(dir, { recursive: true, force: true });
  }
  return res;
}

/** Declared columns exactly; of `_extra`, every key the oracle names (only those when `only` is given). */
function compare(res: RoundResult, where: string, row: Record<string, unknown> | undefined, exp: Expected, only?: string[]): void {
  if (!row) {
    res.mismatches.push(`${where}: no row`);
    return;
  }
  for (const [col, v] of Object.entries(exp.columns)) {
    res.checked++;
    if (!same(row[col], v)) res.mismatches.push(`${where} ${col}: ${show(row[col])}, expected ${show(v)}`);
  }
  const extra = typeof row._extra === 'string' ? (JSON.parse(row._extra) as Record<string, unknown>) : {};
  const keys = only ? Object.keys(extra).filter((k) => only.some((o) => k === o || k.startsWith(`${o}__`))) : Object.keys(extra);
  for (const k of new Set([...keys, ...Object.keys(exp.extra)])) {
    res.checked++;
    if (!same(extra[k], exp.extra[k])) res.mismatches.push(`${where} _extra.${k}: ${show(extra[k])}, expected ${show(exp.extra[k])}`);
  }
}
