import { mkdir, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { LocalSink } from '../../src/sink/local.ts';
import { readDirective } from '../../src/manifest/state-store.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../src/webhooks/server.ts';
import { EVENTS_PREFIX, type EventRecord } from '../../src/webhooks/event-log.ts';

/** The sandbox's own webhooks (control API setAccess / migrate / writeback) arrive and are acted on. */
let root: string;
let sink: LocalSink;
let rx: WebhookReceiver;
let sb: Sandbox;
const logs: any[] = [];

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'wh-sbx-'));
  await mkdir(join(root, 'dest'));
  sink = new LocalSink(join(root, 'dest'));
  rx = await startWebhookReceiver({
    sink,
    secret: 'sandbox-secret-0123456789',
    tokenDir: join(root, 'tokens'),
    purgeOnRevoke: true,
    log: (e) => logs.push(e),
  });
  sb = await startSandbox({ webhookUrl: rx.url, achievementsPerSchool: 5 });
});
afterAll(async () => {
  await sb?.close();
  await rx?.close();
  await rm(root, { recursive: true, force: true });
});

async function records(): Promise<EventRecord[]> {
  const out: EventRecord[] = [];
  for (const p of await sink.list(EVENTS_PREFIX)) out.push(JSON.parse((await sink.read(p))!.toString()));
  return out;
}

describe('sandbox webhooks into the receiver', () => {
  it('approval, revocation with purge, decline, migration and writeback are all acted on', async () => {
    // pending school A9001 is approved by the school
    await sb.control.setAccess('A9001', 'approved');
    await sb.control.flushWebhooks();
    let d = (await readDirective(sink, 'A9001'))!;
    expect(d).toMatchObject({ force_full_seq: 1, deactivated: null });
    const delivered = sb.control.webhooks().find((w) => w.payload.payload_type === 'schoolApproved')!;
    expect(delivered.status).toBe(200);
    const token = delivered.payload.school_token as string;
    expect(typeof token).toBe('string');
    expect((await stat(d.token_file!)).mode & 0o777).toBe(0o600);
    expect((await readFile(d.token_file!, 'utf8')).trim()).toBe(token);
    for (const p of await sink.list('')) expect((await sink.read(p))!.toString()).not.toContain(token);
    expect(JSON.stringify(logs)).not.toContain(token);

    // an approved school with exported files revokes: deactivated and purged
    await sink.writeAtomic('achievements/region=apac/school_id=A1002/r-0001.ndjson', '{}\n');
    await sink.writeAtomic('_state/region=apac/school_id=A1002.json', '{}');
    await sb.control.setAccess('A1002', 'revoked');
    await sb.control.flushWebhooks();
    d = (await readDirective(sink, 'A1002'))!;
    expect(d.deactivated).not.toBeNull();
    expect(await sink.list('achievements/')).toEqual([]);
    const purge = (await sink.list('_manifests/')).filter((p) => p.includes('-purge-'));
    expect(purge).toHaveLength(1);
    expect(JSON.parse((await sink.read(purge[0]!))!.toString()).purged).toEqual([
      { school_id: 'A1002', region: 'apac', reason: expect.stringMatching(/^accessRevoked: /), files_removed: 2 },
    ]);

    await sb.control.setAccess('A9002', 'declined');
    await sb.control.migrate('A1003', 'scheduled');
    await sb.control.migrate('A1003', 'completed');
    const wb = sb.control.writeback('A1001');
    await sb.control.flushWebhooks();
    expect((await readDirective(sink, 'A9002'))!.deactivated).not.toBeNull();
    expect((await readDirective(sink, 'A1003'))!.force_full_seq).toBe(1);

    const recs = await records();
    expect(recs.find((r) => r.payload_type === 'writeback')!.event).toMatchObject({ writeback_id: wb, status: 'SUCCESS' });
    expect(new Set(recs.map((r) => r.payload_type))).toEqual(
      new Set(['schoolApproved', 'accessRevoked', 'accessDeclined', 'schoolMigration', 'writeback']),
    );
    expect(recs.every((r) => r.status === 'applied')).toBe(true);
    // every delivery the sandbox made was accepted
    expect(sb.control.webhooks().map((w) => w.status)).toEqual(sb.control.webhooks().map(() => 200));
    expect(logs.filter((l) => l.event === 'webhook')).toHaveLength(sb.control.webhooks().length);
  });
});
