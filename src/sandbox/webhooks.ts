/**
 * Webhook delivery (spec 6): POST JSON to the configured URL, one at a time in the order the
 * events happened. Failures are recorded, not retried (delivery guarantees are "not shown").
 */
export interface WebhookDelivery {
  payload: Record<string, unknown>;
  status: number | null; // null: the POST failed (error set)
  error?: string;
}

export class WebhookSender {
  readonly deliveries: WebhookDelivery[] = [];
  private chain: Promise<void> = Promise.resolve();

  constructor(private readonly url: string | undefined) {}

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
