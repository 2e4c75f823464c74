/**
 * Pagination (spec 4.1). Offset mode walks with `page`; cursor mode (`cursor=true`) returns an
 * opaque cursor holding the last key served and the page number, so a walk is a keyset scan:
 * every row that exists throughout the walk is returned exactly once, whatever changes between
 * pages. Filters stay in the next URL (every other query parameter is carried over).
 */
import type { KeySource } from './collection.ts';
import { HttpError } from './http-util.ts';

export const DEFAULT_PER_PAGE = 50;

export interface PageParams {
  perPage: number;
  perPageGiven: boolean;
  page: number;
  /** null: offset mode; 'start': first cursor page; otherwise the position after a page. */
  cursor: null | 'start' | { k: number; p: number };
}

/** Which cursors this server still honours: those of the current epoch, and not older than maxAgeMs. */
export interface CursorPolicy {
  /** Bumped by control.invalidateCursors(): every cursor issued before is refused. */
  epoch: number;
  maxAgeMs?: number;
  /** Server now, in ms (stamped into new cursors, compared with old ones). */
  nowMs: number;
}

const POSITIVE_INT = /^[1-9]\d{0,8}$/;

export function parsePageParams(q: URLSearchParams, maxPerPage: number, policy: CursorPolicy): PageParams {
  const pp = q.get('per_page');
  if (pp !== null && !POSITIVE_INT.test(pp)) throw new HttpError(400, 'per_page must be a positive integer');
  const pg = q.get('page');
  if (pg !== null && !POSITIVE_INT.test(pg)) throw new HttpError(400, 'page must be a positive integer');
  const perPage = pp === null ? DEFAULT_PER_PAGE : Math.min(Number(pp), maxPerPage);
  return { perPage, perPageGiven: pp !== null, page: pg === null ? 1 : Number(pg), cursor: parseCursor(q.get('cursor'), policy) };
}

interface CursorFields {
  k: number; // last key served
  p: number; // page number of the page it leads to
  e: number; // epoch it was issued in
  t?: number; // server time it was issued, ms: only when cursors expire (keeps responses byte-identical otherwise)
}

function parseCursor(c: string | null, policy: CursorPolicy): PageParams['cursor'] {
  if (c === null || c === 'false' || c === '0' || c === '') return null;
  if (c === 'true' || c === '1') return 'start';
  const v = decodeCursor(c);
  if (!v) throw new HttpError(400, 'cursor is not a cursor this server issued (use cursor=true to start)', 'invalid_cursor');
  const tooOld = policy.maxAgeMs !== undefined && (v.t === undefined || policy.nowMs - v.t > policy.maxAgeMs);
  if (v.e !== policy.epoch || tooOld) {
    throw new HttpError(400, 'cursor is invalid or has expired; start the walk again with cursor=true', 'cursor_expired');
  }
  return { k: v.k, p: v.p };
}

function decodeCursor(c: string): CursorFields | null {
  const m = /^c2\.([A-Za-z0-9_-]+)$/.exec(c);
  if (!m) return null;
  try {
    const v = JSON.parse(Buffer.from(m[1], 'base64url').toString('utf8')) as Partial<CursorFields>;
    const ints = [v.k, v.p, v.e].every((x) => Number.isSafeInteger(x)) && (v.t === undefined || Number.isSafeInteger(v.t));
    return ints && v.p! > 1 ? (v as CursorFields) : null;
  } catch {
    return null;
  }
}

export function encodeCursor(k: number, p: number, policy: CursorPolicy): string {
  const fields: CursorFields = { k, p, e: policy.epoch };
  if (policy.maxAgeMs !== undefined) fields.t = policy.nowMs;
  return 'c2.' + Buffer.from(JSON.stringify(fields)).toString('base64url');
}

export interface Page {
  keys: number[];
  pagination?: Record<string, unknown>;
}

/** One page of keys from `source`, with the pagination object the response carries (if any). */
export function paginate(source: KeySource, pp: PageParams, selfUrl: URL, policy: CursorPolicy): Page {
  const after = pp.cursor === null ? source.seek((pp.page - 1) * pp.perPage) : pp.cursor === 'start' ? -1 : pp.cursor.k;
  const keys: number[] = [];
  let more = false;
  for (const k of source.keysAfter(after)) {
    if (keys.length === pp.perPage) {
      more = true;
      break;
    }
    keys.push(k);
  }
  if (pp.cursor === null) {
    if (!pp.perPageGiven && pp.page === 1 && !more) return { keys };
    return {
      keys,
      pagination: {
        next: more ? withParams(selfUrl, { page: String(pp.page + 1), cursor: null }) : null,
        previous: pp.page > 1 ? withParams(selfUrl, { page: String(pp.page - 1), cursor: null }) : null,
        more,
        per_page: pp.perPage,
        current_page: pp.page,
      },
    };
  }
  const pageNo = pp.cursor === 'start' ? 1 : pp.cursor.p;
  const last = keys.length ? keys[keys.length - 1] : after;
  return {
    keys,
    pagination: {
      next: more ? withParams(selfUrl, { cursor: encodeCursor(last, pageNo + 1, policy), page: null }) : null,
      previous: null,
      more,
      // Cursor responses show per_page as text: the spec allows "integer or string" and clients must cope.
      per_page: String(pp.perPage),
      current_page: pageNo,
    },
  };
}

function withParams(u: URL, set: Record<string, string | null>): string {
  const next = new URL(u.href);
  for (const [k, v] of Object.entries(set)) {
    if (v === null) next.searchParams.delete(k);
    else next.searchParams.set(k, v);
  }
  return next.href;
}
