/**
 * Everything the sandbox knows: schools and their access state, their data (created on first
 * use), tokens, the clock, faults, the request log and webhooks. Routes and the control API
 * both act on this one object.
 */
import { buildSchools, isApproved, type AccessState, type SchoolDef } from './fixtures.ts';
import { FaultQueue } from './faults.ts';
import { RequestHooks } from './hooks.ts';
import type { CursorPolicy } from './paginate.ts';
import { hexOf } from './hash.ts';
import { SchoolData, type ResourceName, type Scope } from './school-data.ts';
import type { PropertyPermissionNaming } from './scopes.ts';
import { WebhookSender } from './webhooks.ts';
import { isoMicros, type Micros } from './time.ts';

export interface SchoolState extends SchoolDef {
  updated: Micros;
  /** control.setInactive: every path under the school answers 423, whatever its access state. */
  inactive: boolean;
  migration: { scheduledAt: Micros; completedAt: Micros | null; from: string; to: string } | null;
  data?: SchoolData;
}

export interface TokenInfo {
  kind: 'full' | 'limited' | 'school';
  schoolId?: string;
}

export interface RequestLogEntry {
  method: string;
  path: string; // path and query
  status: number; // 0 when the connection was reset
  region: string;
  host: string | undefined;
  at: string; // ISO time the request arrived
}

export interface WorldOptions {
  seed: number;
  schools: number;
  achievementsPerSchool: number;
  /** Row counts of the other resources: the defaults, or SMALL_COUNTS (a few rows per table, for thousands of schools). */
  rowsPerSchool: RowsPerSchool;
  bigSchools: Record<string, number>;
  maxPerPage: number;
  naiveZone: string;
  latencyMs: number;
  webhookUrl?: string;
  cursorMaxAgeMs?: number;
  itemEnvelope: ItemEnvelope;
  regionMode: RegionMode;
  /** How property permissions are named in /permissions lists (scopes.ts). */
  propertyPermissionNaming: PropertyPermissionNaming;
  /** How the sandbox waits (slow faults, latency); tests inject one that records instead of waiting. */
  sleep: (ms: number) => Promise<void>;
}

/**
 * 'small': about two rows per table (achievements, unless achievementsPerSchool says otherwise,
 * assessment aspects, result sets and results), for worlds of thousands of schools.
 */
export type RowsPerSchool = 'default' | 'small';
export const ROWS_PER_SCHOOL: readonly RowsPerSchool[] = ['default', 'small'];
export const SMALL_ACHIEVEMENTS = 2;
const SMALL_COUNTS: Partial<Record<ResourceName, number>> = {
  assessment_aspects: 2,
  assessment_resultsets: 2,
  assessment_results: 2,
};

/**
 * Schools whose data was made and never changed that are kept at once: more are made again on
 * their next request (the same data: it is a pure function of the seed), so 10,000 schools read
 * once a night hold a bounded amount of memory. Changed schools are always kept.
 */
const PRISTINE_KEPT = 256;

/** How item URLs answer: the object itself (spec 2.1) or { data: object }. */
export type ItemEnvelope = 'bare' | 'data';
export const ITEM_ENVELOPES: readonly ItemEnvelope[] = ['bare', 'data'];

/**
 * lenient: a school's lists answer empty at another region's domain, access management answers
 * for every school at the default domain too, GET /schools/{id} answers every school at the
 * default domain. strict: every path naming a school answers only at its own regional domain.
 */
export type RegionMode = 'lenient' | 'strict';
export const REGION_MODES: readonly RegionMode[] = ['lenient', 'strict'];

export class World {
  readonly schools: SchoolState[];
  readonly byId = new Map<string, SchoolState>();
  readonly tokens = new Map<string, TokenInfo>();
  readonly fullToken: string;
  readonly limitedToken: string;
  readonly faults = new FaultQueue();
  readonly hooks = new RequestHooks();
  readonly log: RequestLogEntry[] = [];
  readonly webhooks: WebhookSender;
  latencyMs: number;
  readonly sleep: (ms: number) => Promise<void>;
  itemEnvelope: ItemEnvelope;
  regionMode: RegionMode;
  /** Cursors carry the epoch they were issued in; invalidateCursors() bumps it. */
  cursorEpoch = 0;
  private last: Micros = 0;
  private writebacks = 0;

  constructor(readonly opts: WorldOptions) {
    const start = Date.parse('2024-01-01T00:00:00Z') * 1000;
    this.schools = buildSchools(opts.schools).map((d) => ({ ...d, updated: start + d.ord * 1_000_000, inactive: false, migration: null }));
    for (const s of this.schools) this.byId.set(s.id, s);
    this.fullToken = `sbx_full_${hexOf('full', opts.seed)}`;
    this.limitedToken = `sbx_limited_${hexOf('limited', opts.seed)}`;
    this.tokens.set(this.fullToken, { kind: 'full' });
    this.tokens.set(this.limitedToken, { kind: 'limited' });
    this.latencyMs = opts.latencyMs;
    this.sleep = opts.sleep;
    this.itemEnvelope = opts.itemEnvelope;
    this.regionMode = opts.regionMode;
    this.webhooks = new WebhookSender(opts.webhookUrl);
  }

  /** Server now in microseconds, strictly greater than any value handed out before. */
  tick(): Micros {
    const now = Date.now() * 1000;
    this.last = now > this.last ? now : this.last + 1;
    return this.last;
  }

  now(): Date {
    return new Date(Math.max(Date.now(), Math.floor(this.last / 1000)));
  }

  cursorPolicy(): CursorPolicy {
    return { epoch: this.cursorEpoch, maxAgeMs: this.opts.cursorMaxAgeMs, nowMs: this.now().getTime() };
  }

  /** Schools holding data that was never changed, least recently used first. */
  private readonly pristine = new Set<SchoolState>();

  data(s: SchoolState): SchoolData {
    if (s.data) {
      if (this.pristine.delete(s)) this.pristine.add(s); // most recently used now
      return s.data;
    }
    const n = this.opts.bigSchools[s.id] ?? this.opts.achievementsPerSchool;
    const sizes = this.opts.rowsPerSchool === 'small' ? SMALL_COUNTS : {};
    s.data = new SchoolData(this.opts.seed, s.ord, s.zone, n, () => this.tick(), sizes);
    this.pristine.add(s);
    if (this.pristine.size > PRISTINE_KEPT) this.forgetPristine();
    return s.data;
  }

  /** Drops the data of the least recently used unchanged schools; changed ones leave the list and stay. */
  private forgetPristine(): void {
    for (const old of this.pristine) {
      if (this.pristine.size <= PRISTINE_KEPT) break;
      this.pristine.delete(old);
      if (!old.data?.mutated) old.data = undefined;
    }
  }

  /** Schools whose data is held in memory now (changed ones, and at most PRISTINE_KEPT others). */
  schoolsInMemory(): number {
    let n = 0;
    for (const s of this.schools) if (s.data) n++;
    return n;
  }

  school(id: string): SchoolState {
    const s = this.byId.get(id);
    if (!s) throw new Error(`no school ${id} in the sandbox`);
    return s;
  }

  scopeOf(token: TokenInfo): Scope {
    return { full: token.kind !== 'limited' };
  }

  /** Moves a school to `state`, firing the webhook the move implies; resolves once it was delivered. */
  setAccess(s: SchoolState, state: AccessState, notify = true): Promise<void> {
    const before = s.state;
    s.state = state;
    s.updated = this.tick();
    if (!notify) return Promise.resolve();
    const base = this.webhookSchool(s);
    if (isApproved(state) && !isApproved(before)) {
      const token = `sbx_school_${s.id}_${hexOf(s.id, this.opts.seed)}`;
      this.tokens.set(token, { kind: 'school', schoolId: s.id });
      return this.webhooks.send({ payload_type: 'schoolApproved', school_id: s.id, school_name: s.name, school_token: token, ...base });
    }
    if (state === 'revoked' && before !== 'revoked') {
      return this.webhooks.send({
        payload_type: 'accessRevoked',
        school_id: s.id,
        school_name: s.name,
        ...base,
        revoke_reason: 'Revoked by the school in the sandbox',
      });
    }
    if (state === 'declined' && before !== 'declined') {
      return this.webhooks.send({
        payload_type: 'accessDeclined',
        school_id: s.id,
        school_name: s.name,
        ...base,
        decline_reason: 'Declined by the school in the sandbox',
      });
    }
    return Promise.resolve();
  }

  migrate(s: SchoolState, phase: 'scheduled' | 'completed'): Promise<void> {
    const now = this.tick();
    const from = s.mis ?? 'UNKNOWN';
    if (!s.migration || s.migration.completedAt !== null) {
      s.migration = { scheduledAt: now, completedAt: null, from, to: from === 'Arbor' ? 'Bromcom' : 'Arbor' };
    }
    const m = s.migration;
    if (phase === 'completed') {
      m.completedAt = now;
      this.data(s).bumpGeneration();
      s.mis = m.to;
      s.updated = now;
    }
    return this.webhooks.send({
      payload_type: 'schoolMigration',
      school_id: s.id,
      school_name: s.name,
      migrate_from: m.from,
      migrate_to: m.to,
      scheduled_at: isoMicros(m.scheduledAt),
      completed_at: m.completedAt === null ? null : isoMicros(m.completedAt),
    });
  }

  /** Starts a writeback; its completion webhook follows after this call returns (await webhooks.flush()). */
  writeback(s: SchoolState, type = 'attendance.session'): string {
    const id = `WB${String(++this.writebacks).padStart(6, '0')}-${s.id}`;
    void this.webhooks.send({ payload_type: 'writeback', writeback_id: id, status: 'SUCCESS', type }, true);
    return id;
  }

  private webhookSchool(s: SchoolState): Record<string, string> {
    return { school_la_code: String(s.laCode), school_urn: String(s.urn), school_establishment_number: String(s.establishmentNumber) };
  }
}
