/**
 * One request on one regional listener: log, faults, latency, auth, route, reply. Control API
 * requests (/_control on the default listener) are handed over before logging, so the request
 * log only shows what an exporter sent.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import type { RegionDef } from './fixtures.ts';
import type { FaultRule } from './faults.ts';
import { HttpError, sendError, sendJson, tokenOf } from './http-util.ts';
import type { Ctx, Handler } from './route-kit.ts';
import * as D from './routes-data.ts';
import * as S from './routes-schools.ts';
import type { RequestLogEntry, World } from './world.ts';

const ID = '(A\\d+)';
const ROUTES: [string, RegExp, Handler][] = [
  ['GET', /^\/schools$/, S.schoolList('approved')],
  ['GET', /^\/schools\/all$/, S.schoolList('all')],
  ['GET', /^\/schools\/pending$/, S.schoolList('pending')],
  ['GET', /^\/schools\/audited$/, S.schoolList('audited')],
  ['GET', /^\/schools\/offline$/, S.schoolList('offline')],
  ['GET', /^\/schools\/revoked$/, S.schoolList('revoked')],
  ['GET', /^\/schools\/declined$/, S.schoolList('declined')],
  ['GET', new RegExp(`^/schools/${ID}$`), S.oneSchool],
  ['GET', new RegExp(`^/meta/schools/${ID}$`), S.schoolMeta],
  ['GET', new RegExp(`^/meta/schools/${ID}/permissions$`), S.schoolPermissions],
  ['GET', new RegExp(`^/meta/schools/${ID}/acl$`), S.schoolAcl],
  ['POST', new RegExp(`^/schools/${ID}/request-access$`), S.requestAccess],
  ['DELETE', new RegExp(`^/schools/${ID}/revoke-access$`), S.revokeAccess],
  ['GET', new RegExp(`^/schools/${ID}/deletions$`), D.deletionsList],
  ['GET', new RegExp(`^/schools/${ID}/achievements$`), D.achievementsList],
  ['POST', new RegExp(`^/schools/${ID}/achievements$`), D.achievementCreate],
  ['GET', new RegExp(`^/schools/${ID}/achievements/attributes$`), D.attributes.list],
  ['GET', new RegExp(`^/schools/${ID}/achievements/attributes/([^/]+)$`), D.attributes.item],
  ['GET', new RegExp(`^/schools/${ID}/achievements/([^/]+)$`), D.achievementItem],
  ['PUT', new RegExp(`^/schools/${ID}/achievements/([^/]+)$`), D.achievementUpdate],
  ['DELETE', new RegExp(`^/schools/${ID}/achievements/([^/]+)$`), D.achievementDelete],
  ['GET', new RegExp(`^/schools/${ID}/assessment/aspects$`), D.aspects.list],
  ['GET', new RegExp(`^/schools/${ID}/assessment/aspects/([^/]+)$`), D.aspects.item],
  ['GET', new RegExp(`^/schools/${ID}/assessment/results$`), D.results.list],
  ['GET', new RegExp(`^/schools/${ID}/assessment/results/([^/]+)$`), D.results.item],
  ['GET', new RegExp(`^/schools/${ID}/assessment/resultsets$`), D.resultsets.list],
  ['GET', new RegExp(`^/schools/${ID}/assessment/resultsets/([^/]+)$`), D.resultsets.item],
  ...(['students', 'employees', 'contacts', 'groups', 'classes'] as const).flatMap((r): [string, RegExp, Handler][] => [
    ['GET', new RegExp(`^/schools/${ID}/${r}$`), D[r].list],
    ['GET', new RegExp(`^/schools/${ID}/${r}/([^/]+)$`), D[r].item],
  ]),
];

const MAX_LOG = 200_000;

export interface Listener {
  region: RegionDef;
  origin: string; // http://127.0.0.1:PORT
  isDefault: boolean;
}

export type ControlHandler = (req: IncomingMessage, res: ServerResponse, url: URL) => Promise<void>;

export function requestHandler(world: World, listener: () => Listener, control: ControlHandler) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    handle(world, listener(), control, req, res).catch((e: unknown) => {
      if (!res.headersSent) void sendError(req, res, new HttpError(500, 'sandbox error: ' + (e instanceof Error ? e.message : String(e))));
      else res.destroy();
    });
  };
}

async function handle(world: World, l: Listener, control: ControlHandler, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', requestOrigin(req, l.origin));
  res.setHeader('date', world.now().toUTCString());
  if (l.isDefault && (url.pathname === '/_control' || url.pathname.startsWith('/_control/'))) return control(req, res, url);
  const entry: RequestLogEntry = {
    method: req.method ?? 'GET',
    path: url.pathname + url.search,
    status: 0,
    region: l.region.code,
    host: req.headers.host,
    at: world.now().toISOString(),
  };
  if (world.log.length >= MAX_LOG) world.log.splice(0, MAX_LOG / 10); // a long-running demo must not grow without bound
  world.log.push(entry);
  res.on('finish', () => (entry.status = res.statusCode));

  // Hooks first: a test that holds "page 3" sees it before any fault or latency applies to it.
  const info = world.hooks.describe(entry.method, entry.path, l.region.code, entry.host);
  if (world.hooks.active) await world.hooks.run(info);

  const fault = world.faults.take(entry.path, l.region.code);
  if (fault?.kind === 'reset') {
    req.socket.destroy();
    return;
  }
  if (fault?.kind === 'slow') await world.sleep(fault.delayMs ?? 1000);
  if (fault && /^\d+$/.test(fault.kind)) return sendError(req, res, faultError(fault));
  if (world.latencyMs > 0) await world.sleep(world.latencyMs);

  try {
    const token = tokenOf(req);
    const info = token === null ? undefined : world.tokens.get(token);
    if (!info)
      throw new HttpError(401, token === null ? 'missing access token (use Authorization: Bearer <token>)' : 'the access token is invalid');
    if (!url.pathname.startsWith('/v1.0/')) throw new HttpError(404, 'no such route (paths start with /v1.0/)');
    const path = url.pathname.slice('/v1.0'.length).replace(/\/+$/, '');
    let methodMismatch = false;
    for (const [method, re, handler] of ROUTES) {
      const m = re.exec(path);
      if (!m) continue;
      if (method !== req.method) {
        methodMismatch = true;
        continue;
      }
      const ctx: Ctx = { world, region: l.region, isDefault: l.isDefault, url, req, res, token: info, scope: world.scopeOf(info) };
      const reply = await handler(ctx, m.slice(1).map(decodeSegment));
      return sendJson(req, res, reply.status ?? 200, reply.body, { truncateGzip: fault?.kind === 'truncated-gzip' });
    }
    throw methodMismatch
      ? new HttpError(405, `${req.method} is not allowed on ${url.pathname}`)
      : new HttpError(404, `no such route: ${url.pathname}`);
  } catch (e) {
    if (e instanceof HttpError) return sendError(req, res, e);
    throw e;
  }
}

/**
 * The origin the client addressed: its Host header, so `next` URLs keep a client on the domain it
 * was asked to use; the listener's own origin when the Host header is missing or unusable. The
 * scheme is X-Forwarded-Proto when a proxy set it; otherwise http for an IP address or localhost
 * (this plain-HTTP listener reached directly) and https for any other name: a client that
 * addresses the sandbox by a domain name reaches it through a TLS-terminating proxy, as it would
 * the service, and must not be sent off its HTTPS proxy by page 2.
 */
function requestOrigin(req: IncomingMessage, fallback: string): string {
  const host = req.headers.host;
  if (!host || !/^[A-Za-z0-9.-]+(?::\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](?::\d{1,5})?$/.test(host)) return fallback;
  const forwarded = String(req.headers['x-forwarded-proto'] ?? '')
    .split(',')[0]!
    .trim()
    .toLowerCase();
  const proto = forwarded === 'https' || forwarded === 'http' ? forwarded : isLocalHost(host) ? 'http' : 'https';
  try {
    return new URL(`${proto}://${host}`).origin;
  } catch {
    return fallback;
  }
}

/** An IPv4 or bracketed IPv6 address, or localhost (any port): where plain HTTP is what was asked for. */
export function isLocalHost(host: string): boolean {
  const name = host.replace(/:\d{1,5}$/, '').toLowerCase();
  return name.startsWith('[') || isIP(name) !== 0 || name === 'localhost' || name.endsWith('.localhost');
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new HttpError(400, 'malformed percent-encoding in the path');
  }
}

function faultError(f: FaultRule): HttpError {
  const status = Number(f.kind);
  const headers: Record<string, string> = {};
  if (f.retryAfter !== undefined) headers['retry-after'] = String(f.retryAfter);
  const message =
    {
      423: 'school inactive; try again later',
      429: 'too many requests',
      500: 'internal server error; try again later',
      502: 'bad gateway',
      503: 'temporarily offline for maintenance; try again later',
    }[status] ?? 'fault';
  return new HttpError(status, `${message} (sandbox fault)`, undefined, headers);
}
