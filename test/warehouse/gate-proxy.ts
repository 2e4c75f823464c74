import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A proxy in front of the sandbox's listeners that holds one request matching `hold` until
 * released: a run paused at a known page, so "shard 0 is still running" or "the run is killed
 * here" happens at a point the test chooses, not after a sleep. Bodies are fetched without
 * compression and the sandbox's origins in them (next-page links) are rewritten to the proxy's.
 */
export interface GateProxy {
  /** The proxy's URL for each sandbox URL. */
  map: Record<string, string>;
  /** Resolves with the held request's path when it arrives. */
  reached: Promise<string>;
  release(): void;
  close(): Promise<void>;
}

const DROP_REQUEST = new Set(['host', 'accept-encoding', 'connection', 'content-length']);
const DROP_RESPONSE = new Set(['content-encoding', 'content-length', 'transfer-encoding', 'connection', 'keep-alive']);

export async function startGateProxy(targets: string[], hold: (pathAndQuery: string) => boolean): Promise<GateProxy> {
  let onReached!: (path: string) => void;
  const reached = new Promise<string>((r) => (onReached = r));
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let held = false;
  const servers: Server[] = [];
  const map: Record<string, string> = {};

  const handle = async (target: string, req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = req.url ?? '/';
    if (!held && hold(path)) {
      held = true;
      onReached(path);
      await released;
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (!DROP_REQUEST.has(k) && typeof v === 'string') headers[k] = v;
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const upstream = await fetch(target + path, {
      method: req.method ?? 'GET',
      headers,
      ...(chunks.length ? { body: Buffer.concat(chunks) } : {}),
    });
    let body = await upstream.text();
    for (const [from, to] of Object.entries(map)) body = body.split(from).join(to);
    const out: Record<string, string> = {};
    upstream.headers.forEach((v, k) => {
      if (!DROP_RESPONSE.has(k)) out[k] = v;
    });
    res.writeHead(upstream.status, out);
    res.end(body);
  };

  for (const target of targets) {
    const server = createServer((req, res) => {
      // A client killed while its request was held is gone: its socket errors are expected.
      res.on('error', () => {});
      handle(target, req, res).catch(() => res.destroy());
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    map[target] = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    servers.push(server);
  }
  return {
    map,
    reached,
    release,
    async close() {
      release();
      await Promise.all(
        servers.map(
          (s) =>
            new Promise<void>((resolve) => {
              s.closeAllConnections();
              s.close(() => resolve());
            }),
        ),
      );
    },
  };
}
