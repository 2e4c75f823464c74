/**
 * Webhook delivery (spec 6): POST JSON to the configured URL, one at a time in the order the
 * events happened. Failures are recorded, not retried (delivery guarantees are "not shown").
 */

/** An http(s) URL to POST webhooks to; throws a message naming the problem otherwise. */
export function checkWebhookUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new Error(`webhook URL ${JSON.stringify(url)} is not a URL (expected e.g. http://127.0.0.1:8787/webhooks/<secret>)`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`webhook URL must be http or https, not ${u.protocol}`);
  return url;
}
export interface WebhookDelivery {
  payload: Record<string, unknown>;
  status: number | null; // null: the POST failed (error set)
  error?: string;
}

export class WebhookSender {
  readonly deliveries: WebhookDelivery[] = [];
  private chain: Promise<void> = Promise.resolve();

  constructor(private url: string | undefined) {}

  /** Where later events go (undefined: nowhere). Deliveries already queued keep their URL. */
  setUrl(url: string | undefined): void {
    this.url = url;
  }

  get target(): string | undefined {
    return this.url;
  }

  /** Queues a delivery; the promise settles once it (and everything before it) was attempted. */
  send(payload: Record<string, unknown>, later = false): Promise<void> {
    if (!this.url) return Promise.resolve();
    const url = this.url;
    this.chain = this.chain.then(async () => {
      if (later) await new Promise((r) => setImmediate(r));
      const d: WebhookDelivery = { payload, status: null };
      try {
        const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(payload) });
        await res.arrayBuffer();
        d.status = res.status;
      } catch (e) {
        d.error = e instanceof Error ? e.message : String(e);
      }
      this.deliveries.push(d);
    });
    return this.chain;
  }

  /** Waits until every queued delivery was attempted. */
  flush(): Promise<void> {
    return this.chain;
  }
}
