import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { call } from './helpers.ts';

let receiver: Server;
let received: any[];
let sb: Sandbox;

beforeEach(async () => {
  received = [];
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      received.push({ method: req.method, type: req.headers['content-type'], body: JSON.parse(Buffer.concat(chunks).toString()) });
      res.end('ok');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  sb = await startSandbox({ webhookUrl: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks` });
});
afterEach(async () => {
  await sb.close();
  await new Promise((r) => receiver.close(r));
});

describe('webhooks', () => {
  it('schoolApproved carries a school token that reads that school only', async () => {
    await sb.control.setAccess('A9001', 'approved');
    expect(received).toHaveLength(1);
    const hook = received[0].body;
    expect(received[0].method).toBe('POST');
    expect(received[0].type).toMatch(/application\/json/);
    expect(hook).toEqual({
      payload_type: 'schoolApproved',
      school_id: 'A9001',
      school_name: expect.any(String),
      school_token: expect.any(String),
      school_la_code: expect.any(String),
      school_urn: expect.any(String),
      school_establishment_number: expect.any(String),
    });
    expect((await call(`${sb.url}/v1.0/schools/A9001/achievements`, { token: hook.school_token })).status).toBe(200);
    expect((await call(`${sb.url}/v1.0/schools/A1001/achievements`, { token: hook.school_token })).status).toBe(403);
    const approved = (await call(`${sb.url}/v1.0/schools`, { token: sb.tokens.full })).json.data.map((s: any) => s.id);
    expect(approved).toContain('A9001');
  });

  it('accessRevoked and accessDeclined carry their reasons; offline and pending send nothing', async () => {
    await sb.control.setAccess('A1001', 'revoked');
    await sb.control.setAccess('A9002', 'declined');
    await sb.control.setAccess('A1004', 'offline');
    await sb.control.setAccess('A9003', 'pending');
    expect(received.map((r) => r.body.payload_type)).toEqual(['accessRevoked', 'accessDeclined']);
    expect(received[0].body).toMatchObject({ school_id: 'A1001', revoke_reason: expect.any(String) });
    expect(received[1].body).toMatchObject({ school_id: 'A9002', decline_reason: expect.any(String) });
    expect((await call(`${sb.url}/v1.0/schools/A1004/achievements`, { token: sb.tokens.full })).status).toBe(423);
  });

  it('schoolMigration fires when scheduled and again when completed', async () => {
    await sb.control.migrate('A1001', 'scheduled');
    await sb.control.migrate('A1001', 'completed');
    const [s, c] = received.map((r) => r.body);
    expect(s).toMatchObject({
      payload_type: 'schoolMigration',
      school_id: 'A1001',
      migrate_from: 'SIMS',
      migrate_to: 'Arbor',
      completed_at: null,
    });
    expect(s.scheduled_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect(c).toMatchObject({ scheduled_at: s.scheduled_at, completed_at: expect.stringMatching(/Z$/) });
    expect((await call(`${sb.url}/v1.0/schools/A1001`, { token: sb.tokens.full })).json.mis).toBe('Arbor');
  });

  it('writeback returns an id at once and reports completion later', async () => {
    const id = sb.control.writeback('A1001');
    expect(id).toMatch(/^WB/);
    expect(received).toHaveLength(0);
    await sb.control.flushWebhooks();
    expect(received.map((r) => r.body)).toEqual([
      { payload_type: 'writeback', writeback_id: id, status: 'SUCCESS', type: 'attendance.session' },
    ]);
    expect(sb.control.webhooks()[0]).toMatchObject({ status: 200 });
  });
});

describe('control API over HTTP', () => {
  it('offers the same operations under /_control with the full token', async () => {
    const base = `${sb.url}/_control`;
    const T = sb.tokens.full;
    expect((await call(`${base}/clock`, { token: sb.tokens.limited })).status).toBe(401);
    expect(Date.parse((await call(`${base}/clock`, { token: T })).json.now)).toBeGreaterThan(0);
    const list = (await call(`${base}/schools/A1001/achievements`, { token: T })).json.data;
    expect(list).toHaveLength(120);
    const one = (await call(`${base}/schools/A1001/achievements/${list[0].id}`, { token: T })).json.data;
    expect(one).toEqual(list[0]);
    const patched = (await call(`${base}/schools/A1001/achievements/${list[0].id}`, { method: 'PATCH', token: T, body: { comment: 'x' } }))
      .json.data;
    expect(patched.comment).toBe('x');
    const del = (await call(`${base}/schools/A1001/students/${one.students.data[0].id}`, { method: 'DELETE', token: T })).json.data;
    expect(del.type).toBe('student');
    const res = (await call(`${base}/schools/A1001/students/${del.id}/restore`, { method: 'POST', token: T })).json.data;
    expect(res.restored_at).toBeDefined();
    const added = (await call(`${base}/schools/A1001/achievements`, { method: 'POST', token: T, body: { n: 2 } })).json.ids;
    expect(added).toHaveLength(2);
    expect(
      (await call(`${base}/faults`, { method: 'POST', token: T, body: { kind: '429', pathRegex: 'deletions$', retryAfter: 1 } })).status,
    ).toBe(200);
    expect((await call(`${sb.url}/v1.0/schools/A1001/deletions`, { token: T })).status).toBe(429);
    expect((await call(`${base}/latency`, { method: 'PUT', token: T, body: { ms: 0 } })).status).toBe(200);
    expect((await call(`${base}/schools/A9001/access`, { method: 'PUT', token: T, body: { state: 'approved' } })).json.state).toBe(
      'approved',
    );
    expect(received.map((r) => r.body.payload_type)).toEqual(['schoolApproved']);
    expect((await call(`${base}/schools/A1001/migrate`, { method: 'POST', token: T, body: { phase: 'scheduled' } })).status).toBe(200);
    const wb = (await call(`${base}/schools/A1001/writeback`, { method: 'POST', token: T, body: {} })).json.writeback_id;
    const hooks = (await call(`${base}/webhooks`, { token: T })).json.data;
    expect(hooks.map((h: any) => h.payload.payload_type)).toEqual(['schoolApproved', 'schoolMigration', 'writeback']);
    expect(hooks[2].payload.writeback_id).toBe(wb);
    const log = (await call(`${base}/requests`, { token: T })).json.data;
    expect(log.map((e: any) => e.path)).toEqual(['/v1.0/schools/A1001/deletions']); // control calls are not logged
    expect((await call(`${base}/schools/A1001/unicorns`, { token: T })).status).toBe(400);
    expect((await call(`${base}/schools/A1001/access`, { method: 'PUT', token: T, body: { state: 'sleepy' } })).status).toBe(400);
  });
});

describe('setWebhookUrl', () => {
  it('points later webhooks elsewhere or stops them, in process and over HTTP', async () => {
    const other = await startSandbox({ schools: 1 });
    try {
      await other.control.setAccess('A9001', 'approved'); // no URL yet: nothing sent
      other.control.setWebhookUrl(`http://127.0.0.1:${(receiver.address() as AddressInfo).port}/first`);
      await other.control.setAccess('A9001', 'revoked');
      const put = await call(`${other.url}/_control/webhook-url`, { method: 'PUT', token: other.tokens.full, body: { url: null } });
      expect(put.status).toBe(200);
      await other.control.setAccess('A9002', 'declined');
      expect(received.map((r) => r.body.payload_type)).toEqual(['accessRevoked']);
      const bad = await call(`${other.url}/_control/webhook-url`, { method: 'PUT', token: other.tokens.full, body: { url: 'nope' } });
      expect([bad.status, bad.json.error.message]).toEqual([400, expect.stringMatching(/is not a URL/)]);
    } finally {
      await other.close();
    }
  });
});
