/**
 * The control API over HTTP, under /_control on the default listener (full token only): the
 * operations of SandboxControl, plus holds addressed by id since a function cannot travel.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AccessState } from './fixtures.ts';
import { FAULT_KINDS, type FaultRule } from './faults.ts';
import type { Hold, RequestInfo, RequestMatch } from './hooks.ts';
import { HttpError, readJson, sendError, sendJson, tokenOf } from './http-util.ts';
import type { SandboxControl } from './control.ts';
import type { Rec } from './school-data.ts';
import type { ItemEnvelope, RegionMode, World } from './world.ts';

/** Holds made over HTTP, by id: GET tells whether the request arrived, DELETE releases it. */
class HttpHolds {
  private next = 1;
  private readonly held = new Map<string, { hold: Hold; info: RequestInfo | null }>();

  add(c: SandboxControl, match: RequestMatch): string {
    const id = `h${this.next++}`;
    const entry = { hold: c.hold(match), info: null as RequestInfo | null };
    void entry.hold.reached.then((info) => (entry.info = info));
    this.held.set(id, entry);
    return id;
  }

  /** Waits up to `waitMs` for the request to arrive (a long poll), then says whether it did. */
  async state(id: string, waitMs: number): Promise<{ reached: boolean; request: RequestInfo | null }> {
    const e = this.get(id);
    if (!e.info && waitMs > 0) {
      let timer: NodeJS.Timeout | undefined;
      const info = await Promise.race([e.hold.reached, new Promise<null>((r) => (timer = setTimeout(() => r(null), waitMs)))]);
      clearTimeout(timer);
      if (info) e.info = info;
    }
    return { reached: e.info !== null, request: e.info };
  }

  release(id: string): void {
    this.get(id).hold.release();
    this.held.delete(id);
  }

  private get(id: string) {
    const e = this.held.get(id);
    if (!e) throw new HttpError(404, `no hold ${id}`);
    return e;
  }
}

interface Extra {
  url: URL;
  holds: HttpHolds;
}
type Route = [string, RegExp, (c: SandboxControl, m: string[], body: Rec, x: Extra) => unknown];
const S = '/_control/schools/(A\\d+)';
const CONTROL_ROUTES: Route[] = [
  ['GET', /^\/_control\/clock$/, (c) => ({ now: c.now().toISOString() })],
  ['GET', /^\/_control\/requests$/, (c) => ({ data: c.requests() })],
  ['DELETE', /^\/_control\/requests$/, (c) => (c.clearRequests(), { success: true })],
  ['POST', /^\/_control\/holds$/, (c, _m, b, x) => ({ id: x.holds.add(c, matchFromJson(b)) })],
  ['GET', /^\/_control\/holds\/(h\d+)$/, (_c, [id], _b, x) => x.holds.state(id, waitOf(x.url))],
  ['DELETE', /^\/_control\/holds\/(h\d+)$/, (_c, [id], _b, x) => (x.holds.release(id), { success: true })],
  [
    'PUT',
    /^\/_control\/webhook-url$/,
    (c, _m, b) => {
      if (b.url !== null && typeof b.url !== 'string') throw new HttpError(400, 'url must be a string, or null to stop sending webhooks');
      c.setWebhookUrl(b.url);
      return { success: true, url: b.url };
    },
  ],
  ['GET', /^\/_control\/webhooks$/, async (c) => (await c.flushWebhooks(), { data: c.webhooks() })],
  ['POST', /^\/_control\/faults$/, (c, _m, b) => (c.fault(faultFromJson(b)), { success: true })],
  ['DELETE', /^\/_control\/faults$/, (c) => (c.clearFaults(), { success: true })],
  ['POST', /^\/_control\/cursors\/invalidate$/, (c) => (c.invalidateCursors(), { success: true })],
  ['PUT', /^\/_control\/item-envelope$/, (c, _m, b) => (c.setItemEnvelope(b.mode as ItemEnvelope), { success: true, mode: b.mode })],
  ['PUT', /^\/_control\/region-mode$/, (c, _m, b) => (c.setRegionMode(b.mode as RegionMode), { success: true, mode: b.mode })],
  ['PUT', /^\/_control\/latency$/, (c, _m, b) => (c.latency(Number(b.ms)), { success: true })],
  [
    'PUT',
    new RegExp(`^${S}/access$`),
    async (c, [id], b) => (await c.setAccess(id, b.state as AccessState), { success: true, state: b.state }),
  ],
  [
    'PUT',
    new RegExp(`^${S}/inactive$`),
    (c, [id], b) => (c.setInactive(id, b.inactive as boolean), { success: true, inactive: b.inactive }),
  ],
  ['POST', new RegExp(`^${S}/migrate$`), async (c, [id], b) => (await c.migrate(id, b.phase as 'scheduled'), { success: true })],
  [
    'POST',
    new RegExp(`^${S}/writeback$`),
    (c, [id], b) => ({ writeback_id: c.writeback(id, typeof b.type === 'string' ? b.type : undefined) }),
  ],
  ['GET', new RegExp(`^${S}/([a-z_]+)$`), (c, [id, r]) => ({ data: c.records(id, r) })],
  ['POST', new RegExp(`^${S}/([a-z_]+)$`), (c, [id, r], b) => ({ ids: c.add(id, r, Number(b.n ?? 1)) })],
  [
    'GET',
    new RegExp(`^${S}/([a-z_]+)/([^/]+)$`),
    (c, [id, r, item]) => {
      const v = c.get(id, r, item);
      if (!v) throw new HttpError(404, `no ${r} ${item}`);
      return { data: v };
    },
  ],
  ['PATCH', new RegExp(`^${S}/([a-z_]+)/([^/]+)$`), (c, [id, r, item], b) => ({ data: c.update(id, r, item, b) })],
  ['DELETE', new RegExp(`^${S}/([a-z_]+)/([^/]+)$`), (c, [id, r, item]) => ({ data: c.remove(id, r, item) })],
  ['POST', new RegExp(`^${S}/([a-z_]+)/([^/]+)/restore$`), (c, [id, r, item]) => ({ data: c.restore(id, r, item) })],
];

function faultFromJson(b: Rec): FaultRule {
  if (!FAULT_KINDS.includes(b.kind as never)) throw new HttpError(400, `kind must be one of ${FAULT_KINDS.join(', ')}`);
  const rule: FaultRule = { kind: b.kind as FaultRule['kind'] };
  if (b.times !== undefined) rule.times = Number(b.times);
  if (typeof b.path === 'string') rule.path = b.path;
  if (typeof b.pathRegex === 'string') rule.path = regexOf(b.pathRegex);
  if (typeof b.retryAfter === 'number' || typeof b.retryAfter === 'string') rule.retryAfter = b.retryAfter;
  if (b.delayMs !== undefined) rule.delayMs = Number(b.delayMs);
  if (typeof b.region === 'string') rule.region = b.region;
  return rule;
}

function matchFromJson(b: Rec): RequestMatch {
  const m: RequestMatch = {};
  for (const k of ['school', 'resource', 'path', 'method', 'region'] as const) {
    if (b[k] === undefined) continue;
    if (typeof b[k] !== 'string') throw new HttpError(400, `${k} must be a string`);
    m[k] = b[k];
  }
  if (typeof b.pathRegex === 'string') m.path = regexOf(b.pathRegex);
  if (b.page !== undefined) m.page = Number(b.page);
  return m;
}

function regexOf(source: string): RegExp {
  try {
    return new RegExp(source);
  } catch {
    throw new HttpError(400, `pathRegex is not a regular expression: ${source}`);
  }
}

const MAX_WAIT_MS = 60_000;

function waitOf(url: URL): number {
  const w = url.searchParams.get('wait_ms');
  if (w === null) return 0;
  if (!/^\d{1,9}$/.test(w)) throw new HttpError(400, 'wait_ms must be a non-negative integer');
  return Math.min(Number(w), MAX_WAIT_MS);
}

export function controlHttp(world: World, control: SandboxControl) {
  const holds = new HttpHolds();
  return async (req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> => {
    try {
      if (tokenOf(req) !== world.fullToken) throw new HttpError(401, 'the control API needs the full sandbox token');
      for (const [method, re, fn] of CONTROL_ROUTES) {
        const m = re.exec(url.pathname.replace(/\/+$/, ''));
        if (!m || method !== req.method) continue;
        const body = req.method === 'GET' || req.method === 'DELETE' ? {} : ((await readJson(req)) as Rec);
        if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new HttpError(400, 'body must be a JSON object');
        return sendJson(req, res, 200, await fn(control, m.slice(1), body, { url, holds }));
      }
      throw new HttpError(404, `no control route ${req.method} ${url.pathname}`);
    } catch (e) {
      if (e instanceof HttpError) return sendError(req, res, e);
      throw e;
    }
  };
}
