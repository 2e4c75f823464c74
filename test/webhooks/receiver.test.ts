import { mkdtemp, readFile, readdir, rm, stat } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalSink } from '../../src/sink/local.ts';
import type { Sink } from '../../src/sink/types.ts';
import { readDirective } from '../../src/manifest/state-store.ts';
import type { Manifest } from '../../src/manifest/types.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../src/webhooks/server.ts';
import { EVENTS_PREFIX, type EventRecord } from '../../src/webhooks/event-log.ts';
import type { RunOutcome } from '../../src/webhooks/child-run.ts';
import { readWebhookQueue } from '../../src/webhooks/queue-file.ts';
import { post } from './http.ts';

/** Lets the receiver's own promises and I/O run until cond holds (no clock involved). */
async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !cond(); i++) await new Promise((r) => setImmediate(r));
  if (!cond()) throw new Error('condition not reached');
}

const SECRET = 'test-secret-0123456789abcdef';
const TOKEN = 'school-token-SHOULD-NEVER-LEAK-42';

const approved = (over: Record<string, unknown> = {}) => ({
  payload_type: 'schoolApproved',
  school_id: 'A1001',
  school_name: 'Élan Primary, "North"',
  school_token: TOKEN,
  school_la_code: '201',
  school_urn: '100001',
  school_establishment_number: '3001',
  ...over,
});
const ident = { school_name: 'Élan Primary', school_la_code: '201', school_urn: '100001', school_establishment_number: '3001' };

let root: string;
let destDir: string;
let tokenDir: string;
let sink: Sink;
let logs: any[];
let rx: WebhookReceiver | undefined;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'wh-'));
  destDir = join(root, 'dest');
  tokenDir = join(root, 'tokens');
  const { mkdir } = await import('node:fs/promises');
  await mkdir(destDir);
  sink = new LocalSink(destDir);
  logs = [];
});
afterEach(async () => {
  await rx?.close();
  rx = undefined;
  await rm(root, { recursive: true, force: true });
});

async function start(o: Partial<Parameters<typeof startWebhookReceiver>[0]> = {}) {
  rx = await startWebhookReceiver({ sink, secret: SECRET, tokenDir, log: (e) => logs.push(e), ...o });
  return rx;
}
const send = (body: unknown) => post(rx!.url, JSON.stringify(body));

async function events(): Promise<EventRecord[]> {
  const out: EventRecord[] = [];
  for (const p of await sink.list(EVENTS_PREFIX)) out.push(JSON.parse((await sink.read(p))!.toString()));
  return out;
}

/** Every file under dest and the token dir, with contents: "nothing changed" means this is equal. */
async function snapshot(): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const p of await sink.list('')) out[p] = (await sink.read(p))!.toString();
  for (const f of await readdir(tokenDir).catch(() => [] as string[])) out[`tokens/${f}`] = await readFile(join(tokenDir, f), 'utf8');
  return out;
}

async function allText(): Promise<string> {
  const snap = await snapshot();
  return (
    Object.entries(snap)
      .filter(([k]) => !k.startsWith('tokens/'))
      .map(([k, v]) => k + v)
      .join('\n') + JSON.stringify(logs)
  );
}

describe('webhook receiver: payloads acted on', () => {
  it('writeback: recorded in the event log with its status and logged', async () => {
    await start();
    const r = await send({ payload_type: 'writeback', writeback_id: 'wb-77', status: 'SUCCESS', type: 'attendance.session' });
    expect(r.status).toBe(200);
    expect(r.json.ok).toBe(true);
    const ev = await events();
    expect(ev).toHaveLength(1);
    expect(ev[0]).toMatchObject({
      payload_type: 'writeback',
      status: 'applied',
      event: { writeback_id: 'wb-77', status: 'SUCCESS', type: 'attendance.session' },
    });
    expect(ev[0]!.id).toBe(r.json.id);
    expect(logs).toContainEqual(
      expect.objectContaining({ event: 'webhook', payload_type: 'writeback', writeback_id: 'wb-77', status: 'SUCCESS' }),
    );
    // a redelivered writeback changes nothing
    const before = await snapshot();
    const again = await send({ payload_type: 'writeback', writeback_id: 'wb-77', status: 'SUCCESS', type: 'attendance.session' });
    expect(again.json).toEqual({ duplicate: true, id: r.json.id });
    expect(await snapshot()).toEqual(before);
  });

  it('schoolApproved: token kept 0600 outside dest, directive forces a full refresh, token never stored or logged', async () => {
    await start();
    const r = await send(approved());
    expect(r.status).toBe(200);
    const d = (await readDirective(sink, 'A1001'))!;
    expect(d).toMatchObject({
      version: 1,
      school_id: 'A1001',
      force_full_seq: 1,
      deactivated: null,
      token_file: join(tokenDir, 'school_id=A1001.token'),
    });
    const st = await stat(d.token_file!);
    expect(st.mode & 0o777).toBe(0o600);
    expect((await readFile(d.token_file!, 'utf8')).trim()).toBe(TOKEN);
    expect(await allText()).not.toContain(TOKEN);
    expect(r.body).not.toContain(TOKEN);
    const [ev] = await events();
    expect(ev!.event).toMatchObject({ school_id: 'A1001', school_token_sent: true });
    expect(ev!.event).not.toHaveProperty('school_token');
    expect(JSON.stringify(logs)).not.toContain(SECRET);
  });

  it('a redelivered event changes nothing; the same approval after a revocation is applied again', async () => {
    await start();
    await send(approved());
    const before = await snapshot();
    const dup = await send(approved());
    expect(dup.status).toBe(200);
    expect(dup.json.duplicate).toBe(true);
    expect(await snapshot()).toEqual(before);
    expect((await readDirective(sink, 'A1001'))!.force_full_seq).toBe(1);

    // a rotated token is news, not a redelivery
    const rotated = await send(approved({ school_token: 'rotated-token-99' }));
    expect(rotated.json.ok).toBe(true);
    expect((await readFile(join(tokenDir, 'school_id=A1001.token'), 'utf8')).trim()).toBe('rotated-token-99');

    const rev = await send({ payload_type: 'accessRevoked', school_id: 'A1001', ...ident, revoke_reason: 'Head teacher request' });
    expect(rev.json.ok).toBe(true);
    let d = (await readDirective(sink, 'A1001'))!;
    expect(d.deactivated).toMatchObject({ reason: 'Head teacher request' });
    expect(d.token_file).toBeUndefined();
    await expect(stat(join(tokenDir, 'school_id=A1001.token'))).rejects.toThrow();

    const again = await send(approved({ school_token: 'rotated-token-99' }));
    expect(again.json.ok).toBe(true);
    d = (await readDirective(sink, 'A1001'))!;
    expect(d.deactivated).toBeNull();
    expect(d.force_full_seq).toBe(3);
    const rec = (await events()).find((e) => e.id === again.json.id)!;
    expect(rec.received_at).toHaveLength(3); // first approval, rotated token, approval after the revocation
  });

  it('concurrent redeliveries of one event apply it once', async () => {
    await start();
    const answers = await Promise.all(Array.from({ length: 5 }, () => send(approved())));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    expect(answers.filter((a) => a.json.ok)).toHaveLength(1);
    expect(answers.filter((a) => a.json.duplicate)).toHaveLength(4);
    expect((await readDirective(sink, 'A1001'))!.force_full_seq).toBe(1);
    expect((await events())[0]!.received_at).toHaveLength(1);
  });

  it('accessDeclined with purge: removes the school files and state, keeps others, writes the purge manifest', async () => {
    await start({ purgeOnRevoke: true });
    const mine = [
      'achievements/region=uk/school_id=A1001/20261122T010000Z-ab12-0001.parquet',
      'achievement_students/region=uk/school_id=A1001/20261122T010000Z-ab12-0001.parquet',
      'deletions/region=uk/school_id=A1001/20261122T010000Z-ab12-0001.parquet',
      '_state/region=uk/school_id=A1001.json',
    ];
    const others = [
      'achievements/region=uk/school_id=A10010/20261122T010000Z-ab12-0001.parquet',
      'achievements/region=apac/school_id=A2/20261122T010000Z-ab12-0001.parquet',
      '_state/region=uk/school_id=A10010.json',
      '_manifests/20261122T010000Z-ab12.json',
    ];
    for (const p of [...mine, ...others]) await sink.writeAtomic(p, 'x');
    const r = await send({ payload_type: 'accessDeclined', school_id: 'A1001', ...ident, decline_reason: 'Not now' });
    expect(r.status).toBe(200);
    const left = await sink.list('');
    for (const p of mine) expect(left).not.toContain(p);
    for (const p of others) expect(left).toContain(p);
    const manifests = left.filter((p) => /^_manifests\/\d{8}T\d{6}\.\d{3}Z-purge-[0-9a-f]{4}\.json$/.test(p));
    expect(manifests).toHaveLength(1);
    const m = JSON.parse((await sink.read(manifests[0]!))!.toString()) as Manifest;
    expect(m).toMatchObject({
      version: 1,
      status: 'ok',
      tasks: [],
      purged: [{ school_id: 'A1001', region: 'uk', reason: 'accessDeclined: Not now', files_removed: 4 }],
    });
    expect((await readDirective(sink, 'A1001'))!.deactivated).toMatchObject({ reason: 'Not now' });
  });

  it('accessRevoked without --purge-on-revoke deactivates and keeps the files', async () => {
    await start();
    await sink.writeAtomic('achievements/region=uk/school_id=A5/x.parquet', 'x');
    const r = await send({ payload_type: 'accessRevoked', school_id: 'A5', ...ident, revoke_reason: 'r' });
    expect(r.status).toBe(200);
    expect(await sink.list('achievements/')).toEqual(['achievements/region=uk/school_id=A5/x.parquet']);
    expect((await readDirective(sink, 'A5'))!.deactivated).toMatchObject({
      reason: 'r',
      event: expect.stringMatching(/^accessRevoked [0-9a-f]{12}$/),
    });
  });

  it('schoolMigration: scheduled is recorded only, completed forces a full refresh', async () => {
    await start();
    const base = {
      payload_type: 'schoolMigration',
      school_id: 'A7',
      school_name: 'S',
      migrate_from: 'MIS-A',
      migrate_to: 'MIS-B',
      scheduled_at: '2026-11-20T09:00:00Z',
    };
    expect((await send({ ...base, completed_at: null })).status).toBe(200);
    expect((await readDirective(sink, 'A7'))!.force_full_seq).toBe(0);
    expect((await send({ ...base, completed_at: '2026-11-21T10:30:00+00:00' })).status).toBe(200);
    expect((await readDirective(sink, 'A7'))!.force_full_seq).toBe(1);
    expect((await events()).map((e) => e.status)).toEqual(['applied', 'applied']);
  });

  it('--run: an approval is queued (the queue saved) before the answer, and a run starts for it', async () => {
    const asked: string[][] = [];
    let finish!: (o: RunOutcome) => void;
    await start({
      runPipeline: 'pipelines/x.json',
      queue: { collectMs: 0 },
      runner: (req) => {
        asked.push(req.schools);
        return { done: new Promise<RunOutcome>((r) => (finish = r)), stop: () => finish({ code: 143, signal: null }) };
      },
    });
    expect((await send(approved())).status).toBe(200);
    // answered after the queue file was written
    expect((await readWebhookQueue(sink))!.waiting.map((w) => w.school_id)).toEqual(['A1001']);
    await until(() => asked.length === 1);
    expect(asked).toEqual([['A1001']]);
    expect(logs.find((l) => l.event === 'run_started')).toMatchObject({ schools: 1, school_ids: ['A1001'], shard: '0/1' });
    await rx!.close(); // stops the run: the school stays queued for the next start
    rx = undefined;
    expect((await readWebhookQueue(sink))!).toMatchObject({ waiting: [{ school_id: 'A1001', attempts: 0 }], running: [] });
  });
});

describe('webhook receiver: bad requests change nothing', () => {
  const cases: [string, () => Promise<{ status: number; body: string }>, number][] = [
    ['bad JSON', () => post(rx!.url, '{"payload_type": "writeback",'), 400],
    ['wrong secret', () => post(rx!.url.replace(SECRET, 'wrong-secret-0123456789abcdef'), JSON.stringify(approved())), 404],
    ['secret as a prefix', () => post(rx!.url + 'x', JSON.stringify(approved())), 404],
    ['other path', () => post(rx!.url.replace('/webhooks/', '/hooks/'), JSON.stringify(approved())), 404],
    ['GET', () => post(rx!.url, '', { method: 'GET', contentType: null }), 405],
    ['text/plain', () => post(rx!.url, JSON.stringify(approved()), { contentType: 'text/plain' }), 415],
    ['oversized (declared)', () => post(rx!.url, JSON.stringify(approved({ school_name: 'x'.repeat(70_000) }))), 413],
    [
      'oversized (chunked)',
      () =>
        post(
          rx!.url,
          Array.from({ length: 20 }, () => Buffer.alloc(4096, 0x20)),
          { chunked: true },
        ),
      413,
    ],
    ['unknown payload type', () => post(rx!.url, JSON.stringify({ ...approved(), payload_type: 'schoolExploded' })), 422],
    ['not an object', () => post(rx!.url, '[1,2]'), 422],
    ['unsafe school id', () => post(rx!.url, JSON.stringify(approved({ school_id: '../A1' }))), 422],
    ['field of the wrong type', () => post(rx!.url, JSON.stringify(approved({ school_name: 5 }))), 422],
    ['missing reason', () => post(rx!.url, JSON.stringify({ payload_type: 'accessRevoked', school_id: 'A1', ...ident })), 422],
    [
      'bad completed_at',
      () =>
        post(
          rx!.url,
          JSON.stringify({
            payload_type: 'schoolMigration',
            school_id: 'A1',
            school_name: 's',
            migrate_from: 'a',
            migrate_to: 'b',
            scheduled_at: '2026-01-01T00:00:00Z',
            completed_at: 'soon',
          }),
        ),
      422,
    ],
  ];
  for (const [name, fn, status] of cases) {
    it(`${name} → ${status}`, async () => {
      await start();
      await send({ payload_type: 'writeback', writeback_id: 'w1', status: 'SUCCESS', type: 't' });
      const before = await snapshot();
      const r = await fn();
      expect(r.status).toBe(status);
      expect(r.body).not.toContain(SECRET);
      expect(await snapshot()).toEqual(before);
      if (status === 404) expect(JSON.parse(r.body)).toEqual({ error: 'not found' });
      expect(logs.at(-1)).toMatchObject({ event: 'webhook_rejected', status });
    });
  }

  it('a sender hanging up mid-body stores nothing', async () => {
    let rejected!: (e: any) => void;
    const seen = new Promise<any>((r) => (rejected = r));
    await start({ log: (e: any) => (logs.push(e), e.event === 'webhook_rejected' && rejected(e)) });
    const before = await snapshot();
    const u = new URL(rx!.url);
    const sock = connect(Number(u.port), u.hostname, () => {
      sock.write(
        `POST ${u.pathname} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 500\r\n\r\n{"payload_type":"writeback",`,
      );
      sock.destroy();
    });
    expect(await seen).toMatchObject({ status: 400, reason: 'body incomplete' });
    expect(await snapshot()).toEqual(before);
  });

  it('422 names the fields to fix', async () => {
    await start();
    const r = await send(approved({ school_urn: true, school_id: 'B12' }));
    expect(r.status).toBe(422);
    expect(r.json.problems.join(' ')).toMatch(/school_id.*school_urn|school_urn.*school_id/s);
  });

  it('refuses a weak secret and a token dir inside the destination', async () => {
    await expect(startWebhookReceiver({ sink, secret: 'short' })).rejects.toThrow(/16 to 256/);
    await expect(startWebhookReceiver({ sink, secret: SECRET, tokenDir: join(destDir, 'tokens') })).rejects.toThrow(
      /inside the export destination/,
    );
    await expect(startWebhookReceiver({ sink, secret: SECRET, tokenDir: root })).rejects.toThrow(/contains the export destination/);
  });
});
