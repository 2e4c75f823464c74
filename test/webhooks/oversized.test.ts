import { mkdtemp, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalSink } from '../../src/sink/local.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../src/webhooks/server.ts';

const SECRET = 'test-secret-0123456789abcdef';
let root: string;
let rx: WebhookReceiver | undefined;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'wh-413-'));
});
afterEach(async () => {
  await rx?.close();
  rx = undefined;
  await rm(root, { recursive: true, force: true });
});

/**
 * A sender as simple HTTP clients are (Python's urllib, many webhook senders): it writes the whole
 * request, and only then reads. When a server closes a connection with unread request bytes in
 * it, the kernel answers the rest of the upload with a reset: such a sender fails with "broken
 * pipe" or "connection reset" and never sees the 413 that says what is wrong.
 */
function sendWholeThenRead(url: string, body: Buffer, chunked: boolean): Promise<{ response: string; error?: string }> {
  const u = new URL(url);
  return new Promise((resolve) => {
    const sock = connect(Number(u.port), u.hostname);
    const got: Buffer[] = [];
    let error: string | undefined;
    sock.on('data', (d: Buffer) => got.push(d));
    sock.on('error', (e: NodeJS.ErrnoException) => (error ??= e.code ?? e.message));
    sock.on('close', () => resolve({ response: Buffer.concat(got).toString('latin1'), error }));
    sock.pause(); // read nothing until the whole request is written
    const head =
      `POST ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\nContent-Type: application/json\r\n` +
      (chunked ? 'Transfer-Encoding: chunked\r\n' : `Content-Length: ${body.length}\r\n`) +
      'Connection: close\r\n\r\n';
    const payload = chunked ? Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from('\r\n0\r\n\r\n')]) : body;
    sock.write(head);
    sock.write(payload, () => sock.resume());
  });
}

describe('an oversized webhook body', () => {
  for (const chunked of [false, true]) {
    it(`is read and discarded up to a bound, then answered 413 before the connection closes (${chunked ? 'chunked' : 'Content-Length'})`, async () => {
      const logs: object[] = [];
      rx = await startWebhookReceiver({
        sink: new LocalSink(root),
        secret: SECRET,
        maxBodyBytes: 1024,
        maxDiscardBytes: 32 * 1024 * 1024,
        log: (e) => logs.push(e),
      });
      // more than the kernel's socket buffers hold, so the sender is still writing when the server answers
      const r = await sendWholeThenRead(rx.url, Buffer.alloc(16 * 1024 * 1024, 0x20), chunked);
      // the whole request went out (no EPIPE, no reset), and the answer came back
      expect(r.error).toBeUndefined();
      expect(r.response).toMatch(/^HTTP\/1\.1 413 /);
      expect(r.response).toContain('body too large: at most 1024 bytes');
      expect(logs).toContainEqual(expect.objectContaining({ event: 'webhook_rejected', status: 413 }));
    });
  }

  it('past the discard bound it still answers 413, then closes without reading the rest', async () => {
    rx = await startWebhookReceiver({ sink: new LocalSink(root), secret: SECRET, maxBodyBytes: 1024, maxDiscardBytes: 64 * 1024 });
    const u = new URL(rx.url);
    const r = await new Promise<{ response: string }>((resolve) => {
      const sock = connect(Number(u.port), u.hostname);
      const got: Buffer[] = [];
      sock.on('data', (d: Buffer) => got.push(d));
      sock.on('error', () => {});
      sock.on('close', () => resolve({ response: Buffer.concat(got).toString('latin1') }));
      // announce far more than the bound, send a little past it, then wait for the answer
      sock.write(`POST ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\nContent-Type: application/json\r\nContent-Length: 100000000\r\n\r\n`);
      sock.write(Buffer.alloc(128 * 1024, 0x20));
    });
    expect(r.response).toMatch(/^HTTP\/1\.1 413 /);
  });
});
