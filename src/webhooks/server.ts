import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Sink } from '../sink/types.ts';
import { ConfigError, oneLine } from '../errors.ts';
import { applyWebhookEvent } from './apply.ts';
import { validateEvent } from './events.ts';
import { processRunner, type ChildRunner } from './child-run.ts';
import { RunQueue, type RunQueueOptions } from './run-queue.ts';
import { assertTokenDirOutsideDest } from './token-store.ts';

/**
 * The webhook endpoint. The spec shows no request signing, so the secret is the path:
 * `POST /webhooks/<secret>`; anything else is a 404 that reveals nothing. Serve it behind TLS
 * (a reverse proxy): the secret travels in the request line. An event is stored durably before
 * the answer is 2xx, so a 2xx means the service may forget it.
 */
export interface WebhookReceiverOptions {
  sink: Sink;
  secret: string;
  host?: string;
  port?: number;
  tokenDir?: string;
  purgeOnRevoke?: boolean;
  runPipeline?: string;
  maxBodyBytes?: number;
  /**
   * A rejected request's unread body is read and thrown away up to this many bytes before the
   * answer, so the sender gets the 413 (or 404...) instead of a reset connection. Default: the
   * larger of 1 MiB and 4 × maxBodyBytes. Past it the answer is sent and the connection closed.
   */
  maxDiscardBytes?: number;
  log?: (e: { event: string } & Record<string, unknown>) => void;
  /** The destination settings the runs are given (`--dest`, `--s3-endpoint`, `--s3-region`), so they write where the receiver reads. */
  runDest?: { dest: string; s3Endpoint?: string; s3Region?: string };
  /** How a run is started (tests run the pipeline in-process); default `school-export run runPipeline ...` as a child process. */
  runner?: ChildRunner;
  /** Run queue settings (docs/webhooks.md "The run queue"). */
  queue?: Partial<Omit<RunQueueOptions, 'sink' | 'runner' | 'log'>>;
}

export interface WebhookReceiver {
  url: string;
  /** With --run (or a runner): the run queue. */
  queue?: RunQueue;
  close(): Promise<void>;
}

const SECRET_RE = /^[A-Za-z0-9._~-]{16,256}$/;
const DEFAULT_MAX_BODY = 64 * 1024;

export function assertUsableSecret(secret: string): void {
  if (!SECRET_RE.test(secret)) {
    throw new ConfigError('webhook secret: use 16 to 256 URL-safe characters (letters, digits, . _ ~ -), e.g. `openssl rand -hex 32`');
  }
}

class Reject extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    readonly body: object = { error: reason },
  ) {
    super(reason);
  }
}

export async function startWebhookReceiver(opts: WebhookReceiverOptions): Promise<WebhookReceiver> {
  assertUsableSecret(opts.secret);
  if (opts.tokenDir) await assertTokenDirOutsideDest(opts.tokenDir, opts.sink);
  const log = opts.log ?? (() => {});
  const maxBody = opts.maxBodyBytes ?? DEFAULT_MAX_BODY;
  const maxDiscard = opts.maxDiscardBytes ?? Math.max(1024 * 1024, 4 * maxBody);
  const secretHash = sha256(opts.secret);
  const runner =
    opts.runner ?? (opts.runPipeline ? processRunner({ pipeline: opts.runPipeline, ...runDestOptions(opts.runDest) }) : undefined);
  // the queue is read before the port opens: a queue file that cannot be read stops the start
  const runs = runner ? await RunQueue.open({ ...opts.queue, sink: opts.sink, runner, log }) : undefined;

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    try {
      checkRequest(req, secretHash, maxBody);
      const body = parseJson(await readBody(req, maxBody));
      const v = validateEvent(body);
      if (!v.ok) throw new Reject(422, 'invalid payload', { error: 'invalid payload', problems: v.problems });
      const r = await applyWebhookEvent(opts.sink, v.event, { tokenDir: opts.tokenDir, purgeOnRevoke: opts.purgeOnRevoke });
      const schoolId = v.event.payload_type === 'writeback' ? undefined : v.event.school_id;
      log({
        event: 'webhook',
        payload_type: v.event.payload_type,
        ...(schoolId ? { school_id: schoolId } : {}),
        ...(v.event.payload_type === 'writeback' ? { writeback_id: v.event.writeback_id, status: v.event.status, type: v.event.type } : {}),
        id: r.id,
        duplicate: r.duplicate,
        actions: r.actions,
      });
      // queued (and the queue saved) before the answer: a 2xx means a run will come for the school
      if (r.runSchool && runs) await runs.add(r.runSchool);
      const off = r.directive?.deactivated;
      if (off && schoolId && runs) await runs.drop(schoolId, `access ${off.event}: ${off.reason}`);
      send(res, 200, r.duplicate ? { duplicate: true, id: r.id } : { ok: true, id: r.id, actions: r.actions });
    } catch (e) {
      if (e instanceof Reject) {
        log({ event: 'webhook_rejected', status: e.status, reason: e.reason });
        // Rejected before the body was read (404, 405, 413, 415): read the rest first, within a
        // bound. Closing a socket with unread bytes makes the kernel reset it, and a sender still
        // writing then sees a broken pipe instead of this answer.
        const unread = e.status !== 400 && e.status !== 422;
        const drained = unread ? await drain(req, maxDiscard) : true;
        send(res, e.status, e.body, unread);
        if (!drained) res.once('finish', () => req.destroy()); // past the bound: stop reading
      } else {
        // the service retries on 5xx; the message names files, never the secret or a token
        log({ event: 'webhook_failed', status: 500, error: oneLine(e) });
        send(res, 500, { error: 'internal error: the event was not stored, please redeliver' });
      }
    }
  };

  const server = createServer((req, res) => void handle(req, res));
  server.requestTimeout = 30_000; // a webhook body is small: a slow sender is not waited on for minutes
  server.headersTimeout = 10_000;
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => resolve());
    });
  } catch (e) {
    await runs?.close(); // the port is taken: the queue stays saved for the next start
    throw e;
  }
  const addr = server.address() as AddressInfo;
  const host = addr.address.includes(':') ? `[${addr.address}]` : addr.address;
  return {
    url: `http://${host}:${addr.port}/webhooks/${opts.secret}`,
    ...(runs ? { queue: runs } : {}),
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await runs?.close();
    },
  };
}

function runDestOptions(d: WebhookReceiverOptions['runDest']): { dest?: string; s3Endpoint?: string; s3Region?: string } {
  return d ? { dest: d.dest, s3Endpoint: d.s3Endpoint, s3Region: d.s3Region } : {};
}

function sha256(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

function checkRequest(req: IncomingMessage, secretHash: Buffer, maxBody: number): void {
  const path = (req.url ?? '').split('?')[0]!;
  const m = /^\/webhooks\/([^/]+)$/.exec(path);
  // equal-length digests: the comparison time says nothing about the secret or its length
  if (!m || !timingSafeEqual(sha256(decodeURIComponentSafe(m[1]!)), secretHash)) throw new Reject(404, 'not found');
  if (req.method !== 'POST') throw new Reject(405, 'method not allowed: use POST');
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json') throw new Reject(415, 'unsupported content type: send application/json');
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBody) throw new Reject(413, `body too large: at most ${maxBody} bytes`);
}

function decodeURIComponentSafe(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

function readBody(req: IncomingMessage, maxBody: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (c: Buffer) => {
      size += c.length;
      if (size > maxBody) {
        req.off('data', onData);
        req.pause();
        reject(new Reject(413, `body too large: at most ${maxBody} bytes`));
        return;
      }
      chunks.push(c);
    };
    req.on('data', onData);
    req.once('end', () => resolve(Buffer.concat(chunks)));
    // a sender that hangs up mid-body ('error: aborted', then 'close'): nothing is stored
    const incomplete = () => reject(new Reject(400, 'body incomplete'));
    req.once('error', incomplete);
    req.once('close', () => {
      if (!req.complete) incomplete();
    });
  });
}

/** Reads and discards the rest of a request body; true when it ended within `limit` bytes. */
function drain(req: IncomingMessage, limit: number): Promise<boolean> {
  if (req.complete) return Promise.resolve(true);
  if (req.destroyed) return Promise.resolve(false);
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) return Promise.resolve(false);
  return new Promise((resolve) => {
    let seen = 0;
    const done = (ended: boolean) => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('close', onClose);
      if (!ended) req.pause();
      resolve(ended);
    };
    const onData = (c: Buffer) => {
      seen += c.length;
      if (seen > limit) done(false);
    };
    const onEnd = () => done(true);
    const onClose = () => done(req.complete);
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('close', onClose);
    req.resume();
  });
}

function parseJson(buf: Buffer): unknown {
  try {
    return JSON.parse(buf.toString('utf8'));
  } catch {
    throw new Reject(400, 'body is not valid JSON');
  }
}

function send(res: ServerResponse, status: number, body: object, close = false): void {
  if (res.headersSent) return;
  const text = JSON.stringify(body) + '\n';
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...(status === 405 ? { allow: 'POST' } : {}),
    ...(close ? { connection: 'close' } : {}),
  });
  res.end(text);
}
