/**
 * A caching front for the sandbox, one listener per region, so throughput runs measure the
 * exporter and not the sandbox (which assembles ~30k rows/s, below what the exporter can take).
 * The first time a GET is seen it is forwarded, and its 200 JSON body is stored gzip'd with the
 * sandbox's origins rewritten to the front's (so `next` URLs come back here); afterwards the
 * same path+query is answered from memory. The stored bodies, in the order first seen, are
 * exactly the bytes a warm export receives: the benchmark's ceiling is measured over them.
 * Requests whose query differs (e.g. an incremental run's updated_after) miss and are forwarded,
 * so changes made through the sandbox's control API are seen by them. The front also injects
 * latency (a delay before every /v1.0 answer) and counts requests: the sandbox's own latency and
 * request log would only see cache misses. A replayed answer carries the Date header the sandbox
 * sent when it was recorded: the exporter plans from the server's clock (a windowed read probes
 * for the newest row below it and splits the time up to there into updated_at windows), so the
 * recorded clock makes a replayed run ask the same URLs as the recording run, and be served from
 * memory, rather than miss on every probe and window.
 */
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFile } from 'node:fs/promises';
import { setTimeout as delay } from 'node:timers/promises';
import { gunzipSync, gzipSync } from 'node:zlib';

export interface Front {
  /** region origin of the sandbox → origin of its front */
  origins: Map<string, string>;
  /** delay before every /v1.0 answer */
  latencyMs: number;
  /** /v1.0 requests answered since the last reset */
  requests: number;
  /**
   * Of those, the requests carrying updated_after or updated_before, by `after..before` (a windowed
   * read's pages per window: how evenly the windows split the school), one-row probes apart.
   */
  windows: Map<string, number>;
  /** Of those, the one-row probes (per_page=1) a windowed read plans its windows with. */
  probes: number;
  /** Writes the stored bodies (gzip, first-seen order) as [u32 length][bytes]... to `file`. */
  dump(file: string): Promise<{ pages: number; bytes: number }>;
  close(): Promise<void>;
}

interface Stored {
  body: Buffer;
  contentType: string;
  /** the sandbox's Date header when it answered: replayed, so a replayed run sees the recorded clock */
  date?: string;
}

export async function startFront(sandboxOrigins: string[]): Promise<Front> {
  const cache = new Map<string, Stored>();
  const origins = new Map<string, string>();
  const servers: Server[] = [];
  const rewrite = (text: string): string => {
    for (const [from, to] of origins) text = text.split(from).join(to);
    return text;
  };

  async function handle(upstream: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const api = req.url?.startsWith('/v1.0/') ?? false;
    if (api) {
      front.requests++;
      const q = new URL(req.url ?? '/', 'http://front').searchParams;
      if (q.get('per_page') === '1') front.probes++;
      else if (q.has('updated_after') || q.has('updated_before')) {
        const w = `${q.get('updated_after') ?? ''}..${q.get('updated_before') ?? ''}`;
        front.windows.set(w, (front.windows.get(w) ?? 0) + 1);
      }
      if (front.latencyMs > 0) await delay(front.latencyMs);
    }
    const key = `${upstream} ${req.url}`;
    const hit = req.method === 'GET' ? cache.get(key) : undefined;
    if (hit) return send(res, hit);
    const body = await readBody(req);
    const up = await forward(upstream, req, body);
    const gz = /gzip/.test(String(up.headers['content-encoding'] ?? ''));
    const contentType = String(up.headers['content-type'] ?? 'application/json');
    if (up.status !== 200 || !contentType.includes('json')) {
      const headers: Record<string, string> = { 'content-type': contentType };
      if (gz) headers['content-encoding'] = 'gzip';
      res.writeHead(up.status, headers);
      res.end(up.body);
      return;
    }
    const text = rewrite((gz ? gunzipSync(up.body) : up.body).toString('utf8'));
    const date = typeof up.headers.date === 'string' ? up.headers.date : undefined;
    const stored: Stored = { body: gzipSync(text, { level: 1 }), contentType, ...(date ? { date } : {}) };
    if (req.method === 'GET' && api) cache.set(key, stored);
    send(res, stored);
  }

  for (const upstream of sandboxOrigins) {
    const server = createServer((req, res) => {
      void handle(upstream, req, res).catch((e: unknown) => {
        if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { status: 502, code: 'bad_gateway', message: String(e) } }));
      });
    });
    server.keepAliveTimeout = 5000;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    servers.push(server);
    origins.set(upstream, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  }

  const front: Front = {
    origins,
    latencyMs: 0,
    requests: 0,
    windows: new Map(),
    probes: 0,
    async dump(file) {
      const parts: Buffer[] = [];
      let bytes = 0;
      for (const s of cache.values()) {
        const len = Buffer.alloc(4);
        len.writeUInt32LE(s.body.length);
        parts.push(len, s.body);
        bytes += s.body.length;
      }
      await writeFile(file, Buffer.concat(parts));
      return { pages: cache.size, bytes };
    },
    async close() {
      await Promise.all(servers.map((s) => new Promise<void>((r) => (s.close(() => r()), s.closeAllConnections()))));
    },
  };
  return front;
}

function send(res: ServerResponse, s: Stored): void {
  res.writeHead(200, {
    'content-type': s.contentType,
    'content-encoding': 'gzip',
    'content-length': s.body.length,
    date: s.date ?? new Date().toUTCString(),
  });
  res.end(s.body);
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

type Upstream = { status: number; headers: IncomingMessage['headers']; body: Buffer };

function forward(upstream: string, req: IncomingMessage, body: Buffer): Promise<Upstream> {
  return new Promise((resolve, reject) => {
    const headers = { ...req.headers, 'accept-encoding': 'gzip' };
    delete headers.host;
    const r = request(upstream + req.url, { method: req.method, headers }, (up) => {
      const chunks: Buffer[] = [];
      up.on('data', (c: Buffer) => chunks.push(c));
      up.on('end', () => resolve({ status: up.statusCode ?? 502, headers: up.headers, body: Buffer.concat(chunks) }));
      up.on('error', reject);
    });
    r.on('error', reject);
    r.end(body);
  });
}

/** Reads a dump written by Front.dump. */
export function readDump(buf: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < buf.length;) {
    const n = buf.readUInt32LE(i);
    out.push(buf.subarray(i + 4, i + 4 + n));
    i += 4 + n;
  }
  return out;
}
