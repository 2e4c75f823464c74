/**
 * The control surface tests, the demo and the benchmark use to look at and change the sandbox,
 * in process. The same operations over HTTP under /_control live in control-http.ts.
 */
import { ACCESS_STATES, type AccessState } from './fixtures.ts';
import type { FaultRule } from './faults.ts';
import { checkMatch, type Hold, type RequestHook, type RequestMatch } from './hooks.ts';
import { HttpError } from './http-util.ts';
import { resourceName, type Rec, type ResourceName, type SchoolData } from './school-data.ts';
import { checkWebhookUrl, type WebhookDelivery } from './webhooks.ts';
import {
  ITEM_ENVELOPES,
  REGION_MODES,
  type ItemEnvelope,
  type RegionMode,
  type RequestLogEntry,
  type SchoolState,
  type World,
} from './world.ts';

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
  /**
   * Marks a school inactive (true) or active again (false): every path under /schools/{id}/ and
   * /meta/schools/{id} answers 423 school_inactive; its access state and discovery lists are unchanged.
   */
  setInactive(schoolId: string, inactive: boolean): void;
  migrate(schoolId: string, phase: 'scheduled' | 'completed'): Promise<void>;
  writeback(schoolId: string, type?: string): string;
  fault(rule: FaultRule): void;
  clearFaults(): void;
  latency(ms: number): void;
  /** Every cursor issued before this call answers 400 (code cursor_expired) when used; new walks work. */
  invalidateCursors(): void;
  /** Item URLs answer the object itself ('bare') or { data: object } ('data'). */
  setItemEnvelope(mode: ItemEnvelope): void;
  /** Where a school's paths answer: 'lenient' (default) or 'strict' (only at its own regional domain). */
  setRegionMode(mode: RegionMode): void;
  requests(): RequestLogEntry[];
  /** Empties the request log and starts counting pages (for hold/onRequest) from 1 again. */
  clearRequests(): void;
  /**
   * Holds the first request matching `match` before it is answered, until `release()`.
   * `reached` resolves (with the request) when it arrives. See docs/sandbox.md "Mid-run events".
   */
  hold(match: RequestMatch): Hold;
  /** Runs (and awaits) `fn` before answering every matching request; returns the unsubscribe function. */
  onRequest(match: RequestMatch, fn: RequestHook): () => void;
  webhooks(): WebhookDelivery[];
  /** Where webhooks go from now on (http or https URL); null stops sending them. */
  setWebhookUrl(url: string | null): void;
  /** Resolves once every webhook queued so far was attempted. */
  flushWebhooks(): Promise<void>;
  clock(): Date;
  now(): Date;
  /** Schools whose data is held in memory: every changed one, and at most a few hundred others (made again when asked for). */
  schoolsInMemory(): number;
}

const FULL = { full: true };

function checkedMatch(m: RequestMatch): RequestMatch {
  try {
    checkMatch(m);
  } catch (e) {
    throw new HttpError(400, (e as Error).message);
  }
  return m;
}

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
    setInactive(schoolId, inactive) {
      if (typeof inactive !== 'boolean') throw new HttpError(400, 'inactive must be true or false');
      school(schoolId).inactive = inactive;
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
    invalidateCursors() {
      world.cursorEpoch++;
    },
    setItemEnvelope(mode) {
      if (!ITEM_ENVELOPES.includes(mode)) throw new HttpError(400, `item envelope must be one of ${ITEM_ENVELOPES.join(', ')}`);
      world.itemEnvelope = mode;
    },
    setRegionMode(mode) {
      if (!REGION_MODES.includes(mode)) throw new HttpError(400, `region mode must be one of ${REGION_MODES.join(', ')}`);
      world.regionMode = mode;
    },
    requests: () => world.log.map((e) => ({ ...e })),
    clearRequests() {
      world.log.splice(0);
      world.hooks.resetCounts();
    },
    hold(match) {
      return world.hooks.hold(checkedMatch(match));
    },
    onRequest(match, fn) {
      return world.hooks.on(checkedMatch(match), fn);
    },
    webhooks: () => world.webhooks.deliveries.map((d) => ({ ...d })),
    setWebhookUrl(url) {
      if (url === null) return world.webhooks.setUrl(undefined);
      try {
        world.webhooks.setUrl(checkWebhookUrl(String(url)));
      } catch (e) {
        throw new HttpError(400, (e as Error).message);
      }
    },
    flushWebhooks: () => world.webhooks.flush(),
    clock: () => world.now(),
    now: () => world.now(),
    schoolsInMemory: () => world.schoolsInMemory(),
  };
}
