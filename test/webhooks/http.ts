import { request } from 'node:http';

export interface PostResult {
  status: number;
  body: string;
  json: any;
}

/**
 * A raw HTTP request that resolves on the response even when the server closes the connection
 * while the body is still being sent (the 413 case).
 */
export function post(
  url: string,
  body: string | Buffer | Buffer[],
  o: { method?: string; contentType?: string | null; chunked?: boolean } = {},
): Promise<PostResult> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const headers: Record<string, string> = {};
    if (o.contentType !== null) headers['content-type'] = o.contentType ?? 'application/json';
    const parts = Array.isArray(body) ? body : [Buffer.from(body)];
    if (!o.chunked) headers['content-length'] = String(parts.reduce((n, p) => n + p.length, 0));
    let settled = false;
    const req = request({ host: u.hostname, port: u.port, path: u.pathname + u.search, method: o.method ?? 'POST', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', () => {});
      const finish = () => {
        if (settled) return;
        settled = true;
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, body: text, json });
      };
      res.on('end', finish);
      res.on('close', finish);
    });
    req.on('error', (e) => {
      if (!settled) reject(e);
    });
    void (async () => {
      for (const p of parts) {
        if (req.destroyed) return;
        if (!req.write(p))
          await new Promise<void>((r) => {
            req.once('drain', r);
            req.once('close', r);
          });
      }
      if (!req.destroyed) req.end();
    })();
  });
}
