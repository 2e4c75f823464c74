/**
 * The built-in imitation of the service (spec: "the service API Specification",
 * ../shared/spec/service-api.md from the repository root), seeded and deterministic: one
 * node:http listener per region, discovery and the /_control API on the default (uk) one. See docs/sandbox.md for every choice made where the spec is silent.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createControl, type SandboxControl } from './control.ts';
import { checkWebhookUrl } from './webhooks.ts';
import { delay } from './http-util.ts';
import { controlHttp } from './control-http.ts';
import { REGIONS } from './fixtures.ts';
import { requestHandler, type Listener } from './router.ts';
import {
  ITEM_ENVELOPES,
  REGION_MODES,
  ROWS_PER_SCHOOL,
  SMALL_ACHIEVEMENTS,
  World,
  type ItemEnvelope,
  type RegionMode,
  type RowsPerSchool,
} from './world.ts';
import { PROPERTY_PERMISSION_NAMINGS, type PropertyPermissionNaming } from './scopes.ts';

export type { SandboxControl } from './control.ts';
export type { FaultRule, FaultKind } from './faults.ts';
export type { Hold, RequestHook, RequestInfo, RequestMatch } from './hooks.ts';
export type { AccessState } from './fixtures.ts';
export type { ItemEnvelope, RegionMode, RequestLogEntry, RowsPerSchool } from './world.ts';
export type { PropertyPermissionNaming } from './scopes.ts';
export type { WebhookDelivery } from './webhooks.ts';

export interface SandboxOptions {
  seed?: number;
  schools?: number;
  achievementsPerSchool?: number;
  /** 'small': about two rows per table (docs/sandbox.md, "Thousands of schools"); default 'default'. */
  rowsPerSchool?: RowsPerSchool;
  bigSchools?: Record<string, number>;
  maxPerPage?: number;
  updatedAfterZone?: 'UTC' | 'Europe/London';
  webhookUrl?: string;
  latencyMs?: number;
  /** How the sandbox waits for slow faults and latency (default: a real timer). Tests pass one that records the delays. */
  sleep?: (ms: number) => Promise<void>;
  /** Cursors older than this (server clock) answer 400 cursor_expired; default: they never expire. */
  cursorMaxAgeMs?: number;
  /** Item URLs answer the object itself ('bare', spec 2.1, default) or { data: object }. */
  itemEnvelope?: ItemEnvelope;
  /** Where a school's paths answer (see docs/sandbox.md "Regions"); default 'lenient'. */
  regionMode?: RegionMode;
  /** How property permissions are named in /permissions lists (docs/sandbox.md "Tokens and scopes"); default 'dotted'. */
  propertyPermissionNaming?: PropertyPermissionNaming;
  host?: string;
  port?: number;
}

export interface SandboxRegion {
  code: string;
  domain: string;
  url: string;
}

export interface Sandbox {
  regions: SandboxRegion[];
  url: string;
  domains: Record<string, string>;
  tokens: { full: string; limited: string };
  control: SandboxControl;
  close(): Promise<void>;
}

/** The approved schools a sandbox serves at most (ids A1001..A21000; their record ids stay valid and distinct). */
export const MAX_SCHOOLS = 20_000;

export async function startSandbox(opts: SandboxOptions = {}): Promise<Sandbox> {
  const schools = opts.schools ?? 6;
  if (!Number.isInteger(schools) || schools < 0 || schools > MAX_SCHOOLS)
    throw new Error(`schools must be an integer from 0 to ${MAX_SCHOOLS}`);
  const rowsPerSchool = oneOf('rowsPerSchool', opts.rowsPerSchool ?? 'default', ROWS_PER_SCHOOL);
  if (opts.cursorMaxAgeMs !== undefined && !(opts.cursorMaxAgeMs >= 0)) throw new Error('cursorMaxAgeMs must be a non-negative number');
  const world = new World({
    seed: opts.seed ?? 1,
    schools,
    achievementsPerSchool: opts.achievementsPerSchool ?? (rowsPerSchool === 'small' ? SMALL_ACHIEVEMENTS : 120),
    rowsPerSchool,
    bigSchools: opts.bigSchools ?? {},
    maxPerPage: opts.maxPerPage ?? 1000,
    naiveZone: opts.updatedAfterZone ?? 'UTC',
    latencyMs: opts.latencyMs ?? 0,
    sleep: opts.sleep ?? delay,
    webhookUrl: opts.webhookUrl === undefined ? undefined : checkWebhookUrl(opts.webhookUrl),
    cursorMaxAgeMs: opts.cursorMaxAgeMs,
    itemEnvelope: oneOf('itemEnvelope', opts.itemEnvelope ?? 'bare', ITEM_ENVELOPES),
    regionMode: oneOf('regionMode', opts.regionMode ?? 'lenient', REGION_MODES),
    propertyPermissionNaming: oneOf('propertyPermissionNaming', opts.propertyPermissionNaming ?? 'dotted', PROPERTY_PERMISSION_NAMINGS),
  });
  const control = createControl(world);
  const onControl = controlHttp(world, control);
  const host = opts.host ?? '127.0.0.1';
  const servers: Server[] = [];
  const regions: SandboxRegion[] = [];
  try {
    for (const [k, region] of REGIONS.entries()) {
      // eslint-disable-next-line prefer-const -- assigned once the port is known, read later by the handler
      let listener: Listener | undefined;
      const server = createServer(
        { keepAliveTimeout: 5000 },
        requestHandler(world, () => listener!, onControl),
      );
      servers.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(opts.port ? opts.port + k : 0, host, () => resolve());
      });
      const port = (server.address() as AddressInfo).port;
      const origin = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
      listener = { region, origin, isDefault: k === 0 };
      regions.push({ code: region.code, domain: region.domain, url: origin });
    }
  } catch (e) {
    await Promise.all(servers.map((s) => closeServer(s)));
    throw e;
  }
  let closing: Promise<void> | undefined;
  return {
    regions,
    url: regions[0].url,
    domains: Object.fromEntries(regions.map((r) => [r.domain, r.url])),
    tokens: { full: world.fullToken, limited: world.limitedToken },
    control,
    close() {
      closing ??= (async () => {
        world.hooks.releaseAll();
        await world.webhooks.flush();
        await Promise.all(servers.map((s) => closeServer(s)));
      })();
      return closing;
    },
  };
}

function oneOf<T extends string>(name: string, value: T, allowed: readonly T[]): T {
  if (!allowed.includes(value)) throw new Error(`${name} must be one of ${allowed.join(', ')} (got ${JSON.stringify(value)})`);
  return value;
}

function closeServer(s: Server): Promise<void> {
  return new Promise((resolve) => {
    if (!s.listening) return resolve();
    s.close(() => resolve());
    s.closeAllConnections();
  });
}
