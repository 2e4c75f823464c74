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

const POSITIVE_INT = /^[1-9]\d{0,8}$/;

export function parsePageParams(q: URLSearchParams, maxPerPage: number): PageParams {
  const pp = q.get('per_page');
  if (pp !== null && !POSITIVE_INT.test(pp)) throw new HttpError(400, 'per_page must be a positive integer');
  const pg = q.get('page');
  if (pg !== null && !POSITIVE_INT.test(pg)) throw new HttpError(400, 'page must be a positive integer');
  const perPage = pp === null ? DEFAULT_PER_PAGE : Math.min(Number(pp), maxPerPage);
  return { perPage, perPageGiven: pp !== null, page: pg === null ? 1 : Number(pg), cursor: parseCursor(q.get('cursor')) };
}

function parseCursor(c: string | null): PageParams['cursor'] {
  if (c === null || c === 'false' || c === '0' || c === '') return null;
  if (c === 'true' || c === '1') return 'start';
  const m = /^c1\.([A-Za-z0-9_-]+)$/.exec(c);
  if (m) {
    try {
      const v = JSON.parse(Buffer.from(m[1], 'base64url').toString('utf8')) as { k?: unknown; p?: unknown };
      if (Number.isSafeInteger(v.k) && Number.isSafeInteger(v.p) && (v.p as number) > 1) {
        return { k: v.k as number, p: v.p as number };
      }
    } catch {
      // fall through to the 400 below
    }
  }
  throw new HttpError(400, 'cursor is not a cursor this server issued (use cursor=true to start)');
}

export function encodeCursor(k: number, p: number): string {
  return 'c1.' + Buffer.from(JSON.stringify({ k, p })).toString('base64url');
}

export interface Page {
  keys: number[];
  pagination?: Record<string, unknown>;
}

/** One page of keys from `source`, with the pagination object the response carries (if any). */
export function paginate(source: KeySource, pp: PageParams, selfUrl: URL): Page {
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
      next: more ? withParams(selfUrl, { cursor: encodeCursor(last, pageNo + 1), page: null }) : null,
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
