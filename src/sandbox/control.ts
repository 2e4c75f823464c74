/**
 * The control surface tests, the demo and the benchmark use to look at and change the sandbox:
 * in process (SandboxControl) and over HTTP under /_control (controlHttp), same operations.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ACCESS_STATES, type AccessState } from './fixtures.ts';
import { FAULT_KINDS, type FaultRule } from './faults.ts';
import { HttpError, readJson, sendError, sendJson, tokenOf } from './http-util.ts';
import { resourceName, type Rec, type ResourceName, type SchoolData } from './school-data.ts';
import type { WebhookDelivery } from './webhooks.ts';
import type { RequestLogEntry, SchoolState, World } from './world.ts';

export interface SandboxControl {
  /** Current API objects of a resource (achievements with students and employees embedded; 'deletions' too). Materialises them all. */
  records(schoolId: string, resource: string): Rec[];
  get(schoolId: string, resource: string, id: string): Rec | undefined;
  /** Changes a row (patch: API fields to override) with a fresh updated_at; returns the new object. */
  update(schoolId: string, resource: string, id: string, patch?: Rec): Rec;
  /** Deletes a row; returns the deletion record it produced, or null for resources without one. */
  remove(schoolId: string, resource: string, id: string): Rec | null;
  /** Brings a removed row back; returns its deletion record as the API now shows it (or null). */
  restore(schoolId: string, resource: string, id: string): Rec | null;
  add(schoolId: string, resource: string, n: number): string[];
  setAccess(schoolId: string, state: AccessState): Promise<void>;
  migrate(schoolId: string, phase: 'scheduled' | 'completed'): Promise<void>;
  writeback(schoolId: string, type?: string): string;
  fault(rule: FaultRule): void;
  clearFaults(): void;
  latency(ms: number): void;
  requests(): RequestLogEntry[];
  clearRequests(): void;
  webhooks(): WebhookDelivery[];
  /** Resolves once every webhook queued so far was attempted. */
  flushWebhooks(): Promise<void>;
  clock(): Date;
  now(): Date;
}

const FULL = { full: true };

export function createControl(world: World): SandboxControl {
  const school = (id: string): SchoolState => {
    const s = world.byId.get(id);
    if (!s) throw new HttpError(404, `no school ${id} in the sandbox`);
    return s;
  };
  const resource = (name: string): ResourceName => {
    const r = resourceName(name);
    if (!r) throw new HttpError(400, `unknown resource ${JSON.stringify(name)}`);
    return r;
  };
  const includesFor = (r: ResourceName) => new Set(r === 'achievements' ? ['students', 'employees'] : []);
  const row = (schoolId: string, name: string, id: string, anyState = false): { data: SchoolData; r: ResourceName; i: number } => {
    const r = resource(name);
    const data = world.data(school(schoolId));
    const i = anyState ? data.anyIndexOf(r, id) : data.indexOf(r, id);
    if (i === null) throw new HttpError(404, `no ${name} ${id} in school ${schoolId}`);
    return { data, r, i };
  };
  const deletionView = (data: SchoolData, e: ReturnType<SchoolData['remove']>) => (e ? data.deletions.render(e, data.zone) : null);

  return {
    records(schoolId, name) {
      const s = school(schoolId);
      const data = world.data(s);
      if (name === 'deletions') return data.deletions.entries.map((e) => data.deletions.render(e, s.zone));
      const r = resource(name);
      const inc = includesFor(r);
      const out: Rec[] = [];
      for (const i of data.cols[r].view({}).keysAfter(-1)) out.push(data.render(r, i, inc, FULL));
      return out;
    },
    get(schoolId, name, id) {
      const r = resource(name);
      const data = world.data(school(schoolId));
      const i = data.indexOf(r, id);
      return i === null ? undefined : data.render(r, i, includesFor(r), FULL);
    },
    update(schoolId, name, id, patch = {}) {
      const { data, r, i } = row(schoolId, name, id);
      data.update(r, i, patch);
      return data.render(r, i, includesFor(r), FULL);
    },
    remove(schoolId, name, id) {
      const { data, r, i } = row(schoolId, name, id);
      return deletionView(data, data.remove(r, i));
    },
    restore(schoolId, name, id) {
      const { data, r, i } = row(schoolId, name, id, true);
      if (data.cols[r].exists(i)) throw new HttpError(400, `${name} ${id} is not deleted`);
      return deletionView(data, data.restore(r, i));
    },
    add(schoolId, name, n) {
      const r = resource(name);
      const data = world.data(school(schoolId));
      if (!Number.isInteger(n) || n < 0 || n > 1_000_000) throw new HttpError(400, 'n must be an integer from 0 to 1000000');
      return Array.from({ length: n }, () => data.id(r, data.add(r)));
    },
    setAccess(schoolId, state) {
      if (!ACCESS_STATES.includes(state)) throw new HttpError(400, `state must be one of ${ACCESS_STATES.join(', ')}`);
      return world.setAccess(school(schoolId), state);
    },
    migrate(schoolId, phase) {
      if (phase !== 'scheduled' && phase !== 'completed') throw new HttpError(400, 'phase must be scheduled or completed');
      return world.migrate(school(schoolId), phase);
    },
    writeback: (schoolId, type) => world.writeback(school(schoolId), type),
    fault(rule) {
      try {
        world.faults.add(rule);
      } catch (e) {
        throw new HttpError(400, (e as Error).message);
      }
    },
    clearFaults: () => world.faults.clear(),
    latency(ms) {
      if (!Number.isFinite(ms) || ms < 0) throw new HttpError(400, 'latency must be a non-negative number of ms');
      world.latencyMs = ms;
    },
    requests: () => world.log.map((e) => ({ ...e })),
    clearRequests: () => void world.log.splice(0),
    webhooks: () => world.webhooks.deliveries.map((d) => ({ ...d })),
    flushWebhooks: () => world.webhooks.flush(),
    clock: () => world.now(),
    now: () => world.now(),
  };
}

type Route = [string, RegExp, (c: SandboxControl, m: string[], body: Rec) => unknown];
const S = '/_control/schools/(A\\d+)';
const CONTROL_ROUTES: Route[] = [
  ['GET', /^\/_control\/clock$/, (c) => ({ now: c.now().toISOString() })],
  ['GET', /^\/_control\/requests$/, (c) => ({ data: c.requests() })],
  ['DELETE', /^\/_control\/requests$/, (c) => (c.clearRequests(), { success: true })],
  ['GET', /^\/_control\/webhooks$/, async (c) => (await c.flushWebhooks(), { data: c.webhooks() })],
  ['POST', /^\/_control\/faults$/, (c, _m, b) => (c.fault(faultFromJson(b)), { success: true })],
  ['DELETE', /^\/_control\/faults$/, (c) => (c.clearFaults(), { success: true })],
  ['PUT', /^\/_control\/latency$/, (c, _m, b) => (c.latency(Number(b.ms)), { success: true })],
  [
    'PUT',
    new RegExp(`^${S}/access$`),
    async (c, [id], b) => (await c.setAccess(id, b.state as AccessState), { success: true, state: b.state }),
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
  if (typeof b.pathRegex === 'string') rule.path = new RegExp(b.pathRegex);
  if (typeof b.retryAfter === 'number' || typeof b.retryAfter === 'string') rule.retryAfter = b.retryAfter;
  if (b.delayMs !== undefined) rule.delayMs = Number(b.delayMs);
  if (typeof b.region === 'string') rule.region = b.region;
  return rule;
}

export function controlHttp(world: World, control: SandboxControl) {
  return async (req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> => {
    try {
      if (tokenOf(req) !== world.fullToken) throw new HttpError(401, 'the control API needs the full sandbox token');
      for (const [method, re, fn] of CONTROL_ROUTES) {
        const m = re.exec(url.pathname.replace(/\/+$/, ''));
        if (!m || method !== req.method) continue;
        const body = req.method === 'GET' || req.method === 'DELETE' ? {} : ((await readJson(req)) as Rec);
        if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new HttpError(400, 'body must be a JSON object');
        return sendJson(req, res, 200, await fn(control, m.slice(1), body));
      }
      throw new HttpError(404, `no control route ${req.method} ${url.pathname}`);
    } catch (e) {
      if (e instanceof HttpError) return sendError(req, res, e);
      throw e;
    }
  };
}
