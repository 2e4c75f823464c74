/**
 * A real S3-compatible store for tests: s3rver in a child process on 127.0.0.1, port 0.
 *
 * Why a child process: s3rver encrypts ListObjectsV2 continuation tokens with DES, which
 * Node 20's OpenSSL 3 only allows with --openssl-legacy-provider; that flag must not leak
 * into the vitest worker. The child is this same file, started with tsx and an env marker.
 *
 * s3rver 3.7 lacks what our sink relies on, so the child adds it in front of its router:
 * - ListMultipartUploads (GET /bucket?uploads, with Prefix and Initiated) and
 *   AbortMultipartUpload (DELETE /bucket/key?uploadId=...), over s3rver's own uploads directory;
 * - conditional writes: s3rver reads If-None-Match only on GET, so a PutObject with
 *   `If-None-Match: *` would silently overwrite. The child answers it as S3 does: 412
 *   PreconditionFailed when the key exists, else the write, with conditional writes of one key
 *   serialised so two racing creators cannot both succeed. The request still travels to a real
 *   server over HTTP; only the precondition is evaluated here.
 * It also records the headers of every request that matter to us (server-side encryption,
 * preconditions), offers fault injection (UploadPart answers 500 from a given part number on)
 * and request counters, driven over the IPC channel.
 *
 * Stores that differ (issue 20): `conditionalWrites: false` leaves s3rver as it is, ignoring
 * If-None-Match on PUT like older S3-compatible stores and gateways; `refuse` makes chosen
 * operations answer 501 NotImplemented (a store without them) or 403 AccessDenied
 * (least-privilege credentials without their permission), as S3 does.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const CHILD_MARKER = 'SCHOOL_EXPORT_S3RVER_CHILD';
export const S3RVER_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

/** The environment the AWS SDK's credential chain reads to reach s3rver (child processes take it as is). */
export const S3RVER_ENV = {
  AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
  AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
  AWS_REGION: 'us-east-1',
} as const;

export interface S3rverStats {
  uploadParts: number;
  /** Most UploadPart requests the store was serving at once: the uploader's memory is about this many parts. */
  maxConcurrentParts: number;
  putObjects: number;
  abortedUploads: number;
  /** UploadPart requests the store has answered with success. */
  partsStored: number;
}

/** One request as the store received it: what it was and the headers a test may check. */
export interface S3rverRequest {
  method: string;
  /** Key within the bucket ('' for bucket operations). */
  key: string;
  /** 'PutObject' | 'CreateMultipartUpload' | 'UploadPart' | 'CompleteMultipartUpload' | 'AbortMultipartUpload' | 'ListMultipartUploads' | 'GetObject' | 'other' */
  op: string;
  /** Lower-case header names: x-amz-server-side-encryption*, if-none-match, if-match. */
  headers: Record<string, string>;
  status: number;
}

export interface S3rverHandle {
  endpoint: string;
  bucket: string;
  dir: string;
  port: number;
  /** Graceful stop; removes the data directory when this call created it. */
  close(): Promise<void>;
  /** SIGKILL the store (a crash); the data directory stays for a restart on the same port. */
  kill(): Promise<void>;
  /** Resolves once the store has stored `count` parts in all (stats().partsStored), without polling. */
  partsStored(count: number): Promise<void>;
  /** From this part number on, every UploadPart answers 500 InternalError; null heals the store. */
  failUploadPartsFrom(partNumber: number | null): Promise<void>;
  /** From now on these operations (by S3rverRequest op name) answer NotImplemented or AccessDenied; {} heals. */
  refuse(refuse: Refusals): Promise<void>;
  stats(): Promise<S3rverStats>;
  /** Every request received since the start (or the last clear), in order of arrival. */
  requests(): Promise<S3rverRequest[]>;
  clearRequests(): Promise<void>;
}

/** What a store says to an operation it lacks, or one the credentials may not use. */
export type Refusals = Partial<Record<string, 'NotImplemented' | 'AccessDenied'>>;

type Request =
  | { op: 'fault'; from: number | null }
  | { op: 'refuse'; refuse: Refusals }
  | { op: 'stats' }
  | { op: 'requests' }
  | { op: 'clear-requests' }
  | { op: 'parts-stored'; count: number }
  | { op: 'close' };
type ToChild = Request & { id: number };
type FromChild = { ready: true; port: number } | { id: number; value?: unknown };

export async function startS3rver(
  opts: { dir?: string; port?: number; bucket?: string; conditionalWrites?: boolean; refuse?: Refusals } = {},
): Promise<S3rverHandle> {
  const ownsDir = opts.dir === undefined;
  const dir = opts.dir ?? (await mkdtemp(path.join(tmpdir(), 's3rver-')));
  const bucket = opts.bucket ?? 'test-bucket';
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url)], {
    cwd: root,
    env: {
      ...process.env,
      NODE_OPTIONS: '--openssl-legacy-provider',
      [CHILD_MARKER]: JSON.stringify({
        dir,
        bucket,
        port: opts.port ?? 0,
        conditionalWrites: opts.conditionalWrites ?? true,
        refuse: opts.refuse ?? {},
      }),
    },
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  const port = await new Promise<number>((resolve, reject) => {
    child.on('message', (m: FromChild) => {
      if ('ready' in m) resolve(m.port);
    });
    child.once('exit', (code) => reject(new Error(`s3rver child exited (${code}) before listening: ${stderr}`)));
  });

  // A store that dies under a test shows up there only as ECONNREFUSED: say why it died.
  let stopping = false;
  child.once('exit', (code, signal) => {
    if (!stopping) console.error(`s3rver child on port ${port} exited unexpectedly (${code ?? signal}): ${stderr}`);
  });

  let nextId = 1;
  const call = (msg: Request): Promise<unknown> =>
    new Promise((resolve, reject) => {
      if (child.exitCode !== null || child.signalCode !== null) return reject(new Error('s3rver child is not running'));
      const id = nextId++;
      const onMessage = (m: FromChild) => {
        if ('id' in m && m.id === id) {
          child.off('message', onMessage);
          resolve(m.value);
        }
      };
      child.on('message', onMessage);
      child.send({ ...msg, id });
    });

  const stop = async (how: 'close' | 'kill') => {
    stopping = true;
    if (child.exitCode === null && child.signalCode === null) {
      if (how === 'close') await call({ op: 'close' }).catch(() => child.kill('SIGKILL'));
      else child.kill('SIGKILL');
    }
    await exited;
  };

  return {
    endpoint: `http://127.0.0.1:${port}`,
    bucket,
    dir,
    port,
    close: async () => {
      await stop('close');
      if (ownsDir) await rm(dir, { recursive: true, force: true });
    },
    kill: () => stop('kill'),
    failUploadPartsFrom: async (from) => void (await call({ op: 'fault', from })),
    refuse: async (refuse) => void (await call({ op: 'refuse', refuse })),
    stats: async () => (await call({ op: 'stats' })) as S3rverStats,
    requests: async () => (await call({ op: 'requests' })) as S3rverRequest[],
    clearRequests: async () => void (await call({ op: 'clear-requests' })),
    partsStored: async (count) => void (await call({ op: 'parts-stored', count })),
  };
}

/* ------------------------------------------------------------------ child process side */

async function runChild(config: {
  dir: string;
  bucket: string;
  port: number;
  conditionalWrites: boolean;
  refuse: Refusals;
}): Promise<void> {
  const { createRequire } = await import('node:module');
  const fs = await import('node:fs/promises');
  const require = createRequire(import.meta.url);
  const S3rver = require('s3rver');
  const server = new S3rver({
    address: '127.0.0.1',
    port: config.port,
    silent: true,
    directory: config.dir,
    configureBuckets: [{ name: config.bucket }],
  });
  const stats: S3rverStats = { uploadParts: 0, maxConcurrentParts: 0, putObjects: 0, abortedUploads: 0, partsStored: 0 };
  const partWaiters: { count: number; resolve: () => void }[] = [];
  const partStored = () => {
    stats.partsStored++;
    for (const w of partWaiters.splice(0)) {
      if (stats.partsStored >= w.count) w.resolve();
      else partWaiters.push(w);
    }
  };
  let requests: S3rverRequest[] = [];
  const conditional = new Map<string, Promise<void>>();
  const RECORDED = /^(x-amz-server-side-encryption.*|if-none-match|if-match)$/;
  const opOf = (method: string, key: string, q: Record<string, string | undefined>): string => {
    if (method === 'GET' && key === '' && 'uploads' in q) return 'ListMultipartUploads';
    if (method === 'POST' && 'uploads' in q) return 'CreateMultipartUpload';
    if (method === 'PUT' && q.uploadId && q.partNumber) return 'UploadPart';
    if (method === 'POST' && q.uploadId) return 'CompleteMultipartUpload';
    if (method === 'DELETE' && q.uploadId) return 'AbortMultipartUpload';
    if (method === 'POST' && key === '' && 'delete' in q) return 'DeleteObjects';
    if (method === 'DELETE' && key !== '') return 'DeleteObject';
    if (method === 'PUT' && key !== '') return 'PutObject';
    if (method === 'GET' && key !== '') return 'GetObject';
    return 'other';
  };
  let partsInFlight = 0;
  let failPartsFrom: number | null = null;
  let refuse: Refusals = config.refuse;
  const REFUSALS = {
    NotImplemented: { status: 501, message: 'A header you provided implies functionality that is not implemented' },
    AccessDenied: { status: 403, message: 'Access Denied' },
  } as const;
  guardDirectoryCleanup(server.store);
  const uploadsDir = (bucket: string): string => server.store.getResourcePath(bucket, undefined, 'uploads');
  const xmlEscape = (s: string) => s.replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`);

  // Koa composes middleware when the server starts listening, so unshift puts ours first.
  server.middleware.unshift(async (ctx: any, next: () => Promise<void>) => {
    const [bucket, ...keyParts] = ctx.path.slice(1).split('/');
    const key = decodeURIComponent(keyParts.join('/'));
    const q = ctx.query as Record<string, string | undefined>;
    if (ctx.method === 'GET' && key === '' && 'uploads' in q) {
      const ids = await fs.readdir(uploadsDir(bucket)).catch(() => [] as string[]);
      const prefix = q.prefix ?? '';
      const uploads = (
        await Promise.all(
          ids.map(async (id) => {
            const dir = path.join(uploadsDir(bucket), id);
            const st = await fs.stat(dir).catch(() => undefined);
            return { id, key: await fs.readFile(path.join(dir, 'key'), 'utf8').catch(() => ''), initiated: st?.birthtime ?? new Date(0) };
          }),
        )
      ).filter((u) => u.key.startsWith(prefix));
      ctx.type = 'application/xml';
      ctx.body =
        `<?xml version="1.0" encoding="UTF-8"?><ListMultipartUploadsResult><Bucket>${xmlEscape(bucket)}</Bucket>` +
        `<IsTruncated>false</IsTruncated>` +
        uploads
          .map(
            (u) =>
              `<Upload><Key>${xmlEscape(u.key)}</Key><UploadId>${u.id}</UploadId><Initiated>${u.initiated.toISOString()}</Initiated></Upload>`,
          )
          .join('') +
        `</ListMultipartUploadsResult>`;
      return;
    }
    if (ctx.method === 'DELETE' && key !== '' && q.uploadId) {
      const target = path.join(uploadsDir(bucket), path.basename(q.uploadId));
      const exists = await fs.stat(target).then(
        () => true,
        () => false,
      );
      if (!exists) {
        ctx.status = 404;
        ctx.type = 'application/xml';
        ctx.body = `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchUpload</Code><Message>no such upload</Message><Key>${xmlEscape(key)}</Key></Error>`;
        return;
      }
      await fs.rm(target, { recursive: true, force: true });
      stats.abortedUploads++;
      ctx.status = 204;
      return;
    }
    if (ctx.method === 'PUT' && q.uploadId && q.partNumber) {
      stats.uploadParts++;
      if (failPartsFrom !== null && Number(q.partNumber) >= failPartsFrom) {
        // Read the body first so the client sees a clean 500 rather than a reset connection.
        for await (const _ of ctx.req) void _;
        ctx.status = 500;
        ctx.type = 'application/xml';
        ctx.body = `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code><Message>injected fault</Message></Error>`;
        return;
      }
      stats.maxConcurrentParts = Math.max(stats.maxConcurrentParts, ++partsInFlight);
      try {
        await next();
        if (ctx.status === 200) partStored();
        return;
      } finally {
        partsInFlight--;
      }
    } else if (ctx.method === 'PUT' && key !== '') {
      stats.putObjects++;
    }
    await next();
  });

  server.middleware.unshift(
    // unshifted last, so it runs first: every request is recorded, the ones answered below too
    async (ctx: any, next: () => Promise<void>) => {
      const [bucket, ...keyParts] = ctx.path.slice(1).split('/');
      const key = decodeURIComponent(keyParts.join('/'));
      const q = ctx.query as Record<string, string | undefined>;
      const op = opOf(ctx.method, key, q);
      const headers = Object.fromEntries(Object.entries(ctx.headers as Record<string, string>).filter(([name]) => RECORDED.test(name)));
      const rec: S3rverRequest = { method: ctx.method, key, op, headers, status: 0 };
      requests.push(rec);
      try {
        const refusal = refuse[op];
        if (refusal) {
          for await (const _ of ctx.req) void _;
          ctx.status = REFUSALS[refusal].status;
          ctx.type = 'application/xml';
          ctx.body = `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${refusal}</Code><Message>${REFUSALS[refusal].message}</Message></Error>`;
          return;
        }
        if (config.conditionalWrites && op === 'PutObject' && ctx.headers['if-none-match'] === '*') {
          // serialise conditional writes of one key: check and write are one step, as on S3
          const id = `${bucket}/${key}`;
          const before = conditional.get(id) ?? Promise.resolve();
          let done!: () => void;
          const mine = new Promise<void>((r) => (done = r));
          conditional.set(
            id,
            before.then(() => mine),
          );
          await before;
          try {
            if (await server.store.existsObject(bucket, key)) {
              for await (const _ of ctx.req) void _;
              ctx.status = 412;
              ctx.type = 'application/xml';
              ctx.body = `<?xml version="1.0" encoding="UTF-8"?><Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions you specified did not hold</Message><Condition>If-None-Match</Condition></Error>`;
              return;
            }
            await next();
          } finally {
            done();
            if (conditional.get(id) === mine) conditional.delete(id);
          }
          return;
        }
        await next();
      } finally {
        rec.status = ctx.status;
      }
    },
  );

  // A crashed test worker must not leave a store behind: the IPC channel closing ends the child.
  process.on('disconnect', () => process.exit(0));
  const address = await server.run();
  process.on('message', async (m: ToChild) => {
    if (m.op === 'fault') failPartsFrom = m.from;
    if (m.op === 'refuse') refuse = m.refuse;
    if (m.op === 'close') await server.close();
    if (m.op === 'clear-requests') requests = [];
    if (m.op === 'parts-stored' && stats.partsStored < m.count) {
      await new Promise<void>((resolve) => partWaiters.push({ count: m.count, resolve }));
    }
    const value = m.op === 'stats' ? { ...stats } : m.op === 'requests' ? requests : undefined;
    process.send?.({ id: m.id, value }, () => {
      if (m.op === 'close') process.exit(0);
    });
  });
  process.send?.({ ready: true, port: address.port });
}

/**
 * s3rver's deleteObject removes the key's directories once they are empty, so a PutObject into the
 * same directory at that moment opens its file in a directory that is gone: the write stream's
 * error has no listener and the whole store crashes (two runs probing one prefix together did it
 * in CI). And a key whose directory is already gone cannot be deleted at all: the cleanup's readdir
 * throws ENOENT, a 500 on every retry, where S3 answers 204. So writes share the tree, a delete has
 * it alone, and a directory already gone counts as cleaned up.
 */
function guardDirectoryCleanup(store: any): void {
  const inflight = new Set<Promise<unknown>>();
  let deleting: Promise<void> | null = null;
  let deletes: Promise<void> = Promise.resolve();
  const shared = async <T>(write: () => Promise<T>): Promise<T> => {
    while (deleting) await deleting;
    const p = write();
    inflight.add(p);
    try {
      return await p;
    } finally {
      inflight.delete(p);
    }
  };
  const alone = async <T>(remove: () => Promise<T>): Promise<T> => {
    const before = deletes;
    let release!: () => void;
    const mine = new Promise<void>((r) => (release = r));
    deletes = before.then(() => mine);
    await before;
    deleting = mine;
    try {
      await Promise.allSettled([...inflight]);
      return await remove();
    } finally {
      deleting = null;
      release();
    }
  };
  for (const name of ['putObject', 'copyObject'] as const) {
    const write = store[name]?.bind(store);
    if (write) store[name] = (...args: unknown[]) => shared(() => write(...args));
  }
  const remove = store.deleteObject.bind(store);
  store.deleteObject = (...args: unknown[]) =>
    alone(() =>
      remove(...args).catch((e: NodeJS.ErrnoException) => {
        if (e.code !== 'ENOENT') throw e;
      }),
    );
}

const childConfig = process.env[CHILD_MARKER];
if (childConfig && process.send) {
  runChild(JSON.parse(childConfig)).catch((e) => {
    console.error(e);
    process.exit(1);
  });
}
