/** What every route handler gets, and the helpers they share: gates, windows, includes, list bodies. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { arraySource, type KeySource, type Window } from './collection.ts';
import { isApproved, type RegionDef } from './fixtures.ts';
import { HttpError, RawJson } from './http-util.ts';
import { paginate, parsePageParams } from './paginate.ts';
import type { Scope } from './school-data.ts';
import { parseQueryDate, type Micros } from './time.ts';
import type { SchoolState, TokenInfo, World } from './world.ts';

export interface Ctx {
  world: World;
  region: RegionDef;
  isDefault: boolean;
  url: URL; // absolute, on this listener's origin
  req: IncomingMessage;
  res: ServerResponse;
  token: TokenInfo;
  scope: Scope;
}

export interface Reply {
  status?: number;
  body: unknown;
}

export type Handler = (ctx: Ctx, params: string[]) => Reply | Promise<Reply>;

/** A date query parameter, or undefined when absent; 400 when unreadable. */
export function dateParam(ctx: Ctx, name: string, naiveZone = ctx.world.opts.naiveZone): Micros | undefined {
  const v = ctx.url.searchParams.get(name);
  if (v === null) return undefined;
  const t = parseQueryDate(v, naiveZone);
  if (t === null) throw new HttpError(400, `${name} is not a date (expected e.g. "2024-03-31 01:30:00")`);
  return t;
}

export function windowOf(ctx: Ctx): Window {
  return { after: dateParam(ctx, 'updated_after'), before: dateParam(ctx, 'updated_before') };
}

export function includesOf(ctx: Ctx, allowed: readonly string[]): Set<string> {
  const v = ctx.url.searchParams.get('include');
  const set = new Set<string>();
  if (v === null || v.trim() === '') return set;
  for (const name of v
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean)) {
    if (!allowed.includes(name))
      throw new HttpError(400, `include "${name}" is not available here (allowed: ${allowed.join(', ') || 'none'})`);
    set.add(name);
  }
  return set;
}

export function boolParam(ctx: Ctx, name: string): boolean | undefined {
  const v = ctx.url.searchParams.get(name);
  if (v === null) return undefined;
  if (v === '' || v === 'true' || v === '1') return true;
  if (v === 'false' || v === '0') return false;
  throw new HttpError(400, `${name} must be true or false`);
}

/** A list body: one page of `source`, each key rendered once. */
export function listReply(ctx: Ctx, source: KeySource, render: (key: number) => unknown, includes?: readonly string[]): Reply {
  const policy = ctx.world.cursorPolicy();
  const pp = parsePageParams(ctx.url.searchParams, ctx.world.opts.maxPerPage, policy);
  const page = paginate(source, pp, ctx.url, policy);
  const data = page.keys.map(render);
  const meta: Record<string, unknown> = {};
  if (page.pagination) meta.pagination = page.pagination;
  if (includes) meta.includes = includes;
  return { body: { data, meta } };
}

/** Like listReply, for renderers that produce each row's JSON text (byte-identical to JSON.stringify of the object). */
export function listReplyJson(ctx: Ctx, source: KeySource, renderJson: (key: number) => string, includes?: readonly string[]): Reply {
  const policy = ctx.world.cursorPolicy();
  const pp = parsePageParams(ctx.url.searchParams, ctx.world.opts.maxPerPage, policy);
  const page = paginate(source, pp, ctx.url, policy);
  const meta: Record<string, unknown> = {};
  if (page.pagination) meta.pagination = page.pagination;
  if (includes) meta.includes = includes;
  return { body: new RawJson('{"data":[' + page.keys.map(renderJson).join(',') + '],"meta":' + JSON.stringify(meta) + '}') };
}

export const EMPTY_SOURCE: KeySource = arraySource<number>(
  [],
  (k) => k,
  () => true,
);

/**
 * The school a request addresses, at this listener. Wrong region: 404, except that in the lenient
 * region mode a data list answers an empty list (null here: "returns no data"), and access
 * management and the school's meta, permissions and ACL (the application's relation with the
 * school, like request-access) answer on the default listener too. Then the token (403), the
 * inactive switch (423, every path), and for data paths (needsAccess) the access state: offline
 * 423, not approved 403.
 */
export function gateSchool(ctx: Ctx, id: string, kind: 'list' | 'item' | 'access' | 'meta', needsAccess = true): SchoolState | null {
  const s = ctx.world.byId.get(id);
  if (!s) throw new HttpError(404, `school ${id} not found`);
  if (s.region.code !== ctx.region.code) {
    const lenient = ctx.world.regionMode === 'lenient';
    if (lenient && kind === 'list') return null;
    const atDefault = lenient && ctx.isDefault && (kind === 'access' || kind === 'meta');
    if (!atDefault) throw new HttpError(404, `school ${id} not found in this region`);
  }
  if (ctx.token.kind === 'school' && ctx.token.schoolId !== id) throw new HttpError(403, 'this school token belongs to another school');
  if (s.inactive) throw inactive(id);
  if (!needsAccess) return s;
  if (s.state === 'offline') throw inactive(id);
  if (!isApproved(s.state))
    throw new HttpError(403, `school ${id} has not approved access for this application (state: ${s.state})`, 'access_not_approved');
  return s;
}

/** One object of an item URL: bare (spec 2.1) or as { data } (itemEnvelope 'data', like the official PHP client expects). */
export function itemReply(ctx: Ctx, object: unknown, status?: number): Reply {
  return { status, body: ctx.world.itemEnvelope === 'data' ? { data: object } : object };
}

/**
 * The object a POST or PUT created or changed: bare in both envelope modes. The spec does not show
 * these bodies (4.5); the official PHP client's post() returns the decoded body itself and its
 * callers read `->id` from it, while only its get() unwraps `->data` (docs/sandbox.md).
 */
export function writeReply(object: unknown, status?: number): Reply {
  return { status, body: object };
}

function inactive(id: string): HttpError {
  return new HttpError(423, `school ${id} is currently inactive; try again later`);
}

export function requireFull(ctx: Ctx, what: string): void {
  if (!ctx.scope.full) throw new HttpError(403, `the access token lacks the scope for ${what}`);
}
