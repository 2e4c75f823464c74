/**
 * Deterministic mid-run events: a test names a request (school, resource or path, the how-many-th
 * request to that path, method, region) and either runs code before it is answered (onRequest)
 * or holds it until released (hold). "Page N" is the N-th request with that method to that path
 * (query left out) since the sandbox started or the request log was cleared, so a test can pause
 * a run at a known page instead of sleeping and hoping the run is there.
 */

/** What a hook sees of a request (plain data: also what the HTTP control API returns). */
export interface RequestInfo {
  method: string;
  /** Path and query, as in the request log. */
  path: string;
  /** Path without the query. */
  pathname: string;
  /** The school the path names (`/schools/{id}/...`, `/meta/schools/{id}...`), if any. */
  school: string | null;
  /** The path after `/v1.0/schools/{id}/` (e.g. `achievements`, `assessment/results`), if any. */
  resource: string | null;
  /** 1-based count of requests with this method to this pathname (this one included). */
  page: number;
  region: string;
  host: string | undefined;
}

/** Which requests a hook applies to; every given field must match (an empty match takes every request). */
export interface RequestMatch {
  school?: string;
  /** The path after `/v1.0/schools/{id}/`, exactly: `achievements`, `deletions`, `assessment/results`. */
  resource?: string;
  /** Substring of (or RegExp tested on) the path and query, like fault rules. */
  path?: string | RegExp;
  /** The page-th request with this method to this pathname (see RequestInfo.page). */
  page?: number;
  /** HTTP method, any case. */
  method?: string;
  /** Only requests to this region's listener. */
  region?: string;
}

export type RequestHook = (info: RequestInfo) => void | Promise<void>;

export interface Hold {
  /** Resolves when the first matching request arrives (it is then held). */
  reached: Promise<RequestInfo>;
  /** Lets the held request go on (or disarms the hold when nothing matched yet). Idempotent. */
  release(): void;
}

interface Registered {
  match: RequestMatch;
  fn: RequestHook;
}

const SCHOOL_PATH = /^\/v1\.0\/(?:meta\/)?schools\/(A\d+)(?:\/(.+?))?\/*$/;

export function describeRequest(method: string, pathAndQuery: string, region: string, host: string | undefined, page: number): RequestInfo {
  const q = pathAndQuery.indexOf('?');
  const pathname = q < 0 ? pathAndQuery : pathAndQuery.slice(0, q);
  const m = SCHOOL_PATH.exec(pathname);
  const resource = m?.[2] !== undefined && !pathname.startsWith('/v1.0/meta/') ? m[2] : null;
  return { method, path: pathAndQuery, pathname, school: m?.[1] ?? null, resource, page, region, host };
}

export function matchesRequest(m: RequestMatch, r: RequestInfo): boolean {
  if (m.school !== undefined && m.school !== r.school) return false;
  if (m.resource !== undefined && m.resource !== r.resource) return false;
  if (m.page !== undefined && m.page !== r.page) return false;
  if (m.method !== undefined && m.method.toUpperCase() !== r.method) return false;
  if (m.region !== undefined && m.region !== r.region) return false;
  if (m.path !== undefined && !(typeof m.path === 'string' ? r.path.includes(m.path) : m.path.test(r.path))) return false;
  return true;
}

export function checkMatch(m: RequestMatch): void {
  if (m.page !== undefined && (!Number.isInteger(m.page) || m.page < 1)) throw new Error('page must be a positive integer');
  for (const k of ['school', 'resource', 'method', 'region'] as const) {
    if (m[k] !== undefined && typeof m[k] !== 'string') throw new Error(`${k} must be a string`);
  }
}

export class RequestHooks {
  private hooks: Registered[] = [];
  private counts = new Map<string, number>();
  private pendingReleases = new Set<() => void>();

  /** Counts the request and builds what hooks see; cheap (one Map update) when no hook is registered. */
  describe(method: string, pathAndQuery: string, region: string, host: string | undefined): RequestInfo {
    const q = pathAndQuery.indexOf('?');
    const key = method + ' ' + (q < 0 ? pathAndQuery : pathAndQuery.slice(0, q));
    const page = (this.counts.get(key) ?? 0) + 1;
    this.counts.set(key, page);
    return describeRequest(method, pathAndQuery, region, host, page);
  }

  get active(): boolean {
    return this.hooks.length > 0;
  }

  /** Runs every matching hook in registration order, awaiting each. */
  async run(info: RequestInfo): Promise<void> {
    for (const h of [...this.hooks]) {
      if (this.hooks.includes(h) && matchesRequest(h.match, info)) await h.fn(info);
    }
  }

  on(match: RequestMatch, fn: RequestHook): () => void {
    checkMatch(match);
    const h: Registered = { match, fn };
    this.hooks.push(h);
    return () => {
      const k = this.hooks.indexOf(h);
      if (k >= 0) this.hooks.splice(k, 1);
    };
  }

  hold(match: RequestMatch): Hold {
    let reach!: (info: RequestInfo) => void;
    const reached = new Promise<RequestInfo>((r) => (reach = r));
    let letGo!: () => void;
    const released = new Promise<void>((r) => (letGo = r));
    let done = false;
    const release = () => {
      if (done) return;
      done = true;
      off();
      this.pendingReleases.delete(release);
      letGo();
    };
    const off = this.on(match, (info) => {
      off(); // only the first matching request is held
      reach(info);
      return released;
    });
    this.pendingReleases.add(release);
    return { reached, release };
  }

  /** Starts counting pages again from 1 (with the request log). */
  resetCounts(): void {
    this.counts.clear();
  }

  /** Lets every held request go (the sandbox is closing). */
  releaseAll(): void {
    for (const r of [...this.pendingReleases]) r();
  }
}
