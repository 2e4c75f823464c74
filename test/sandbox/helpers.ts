/** Raw HTTP against the sandbox (node:http, so compression and headers are what the server sent). */
import { request } from 'node:http';
import { gunzipSync } from 'node:zlib';

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  raw: Buffer; // body bytes as sent (maybe gzip)
  text: string; // decoded body
  json: any;
}

export function call(
  url: string,
  opts: { method?: string; token?: string | null; auth?: string; gzip?: boolean; body?: unknown; headers?: Record<string, string> } = {},
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.auth !== undefined) headers.authorization = opts.auth;
    else if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    if (opts.gzip) headers['accept-encoding'] = 'gzip';
    let payload: Buffer | undefined;
    if (opts.body !== undefined) {
      payload = Buffer.from(typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body));
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(payload.length);
    }
    const req = request(url, { method: opts.method ?? 'GET', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const raw = Buffer.concat(chunks);
        const text = (res.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw).toString('utf8');
        let json: unknown;
        try {
          json = text ? JSON.parse(text) : undefined;
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, raw, text, json });
      });
    });
    req.on('error', reject);
    req.end(payload);
  });
}

/** Follows meta.pagination.next from `url` and returns every row. */
export async function walk(url: string, token: string, between?: (page: number) => void | Promise<void>): Promise<any[]> {
  const rows: any[] = [];
  let next: string | null = url;
  let page = 0;
  const seen = new Set<string>();
  while (next) {
    if (seen.has(next)) throw new Error('repeated next url ' + next);
    seen.add(next);
    const r = await call(next, { token });
    if (r.status !== 200) throw new Error(`status ${r.status}: ${r.text}`);
    rows.push(...r.json.data);
    next = r.json.meta.pagination?.next ?? null;
    if (next && between) await between(++page);
  }
  return rows;
}
