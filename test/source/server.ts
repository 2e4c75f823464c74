import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach } from 'vitest';
import { ApiClient, type ClientOptions, type PageBatch } from '../../src/source/client.ts';

export interface Recorded {
  method: string;
  url: URL;
  headers: IncomingMessage['headers'];
  body: string;
}

export interface TestServer {
  url: string;
  requests: Recorded[];
  close(): Promise<void>;
}

/** A node:http server on 127.0.0.1:0 that records every request before handing it to `handler`. */
export async function startServer(handler: (req: Recorded, res: ServerResponse, n: number) => void | Promise<void>): Promise<TestServer> {
  const requests: Recorded[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const rec: Recorded = {
        method: req.method ?? 'GET',
        url: new URL(req.url ?? '/', 'http://placeholder'),
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      requests.push(rec);
      Promise.resolve(handler(rec, res, requests.length)).catch((e: unknown) => {
        res.statusCode = 599;
        res.end(String(e));
      });
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

export function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** Writes the first `fraction` of a body, announced at full length, then cuts the connection. */
export function cutShort(res: ServerResponse, body: Buffer, fraction: number, headers: Record<string, string> = {}): void {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length, ...headers });
  res.write(body.subarray(0, Math.floor(body.length * fraction)), () => {
    res.socket?.destroy();
  });
}

export const rows = (from: number, n: number) =>
  Array.from({ length: n }, (_, i) => ({ id: `A${from + i}`, name: `row ${from + i}`, points: from + i }));

/**
 * The per-file scaffolding the client tests share: servers and clients made through it are
 * closed after each test; clients retry fast so fault tests stay quick.
 */
export function useClientHarness(token: string) {
  let servers: TestServer[] = [];
  let clients: ApiClient[] = [];
  afterEach(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await Promise.all(servers.map((s) => s.close()));
    servers = [];
    clients = [];
  });
  return {
    async server(h: Parameters<typeof startServer>[0]): Promise<TestServer> {
      const s = await startServer(h);
      servers.push(s);
      return s;
    },
    client(url: string, extra: Partial<ClientOptions> = {}): ApiClient {
      const c = new ApiClient({ apiUrl: url, token, retry: { baseDelayMs: 1, maxDelayMs: 5 }, ...extra });
      clients.push(c);
      return c;
    },
  };
}

export async function all(gen: AsyncIterable<PageBatch>): Promise<PageBatch[]> {
  const out: PageBatch[] = [];
  for await (const b of gen) out.push(b);
  return out;
}
