import { describe, expect, it } from 'vitest';
import { resolveRunConfig } from '../../src/config/resolve.ts';

// Each task holds a page and fetches the next ahead: a pool smaller than that queued requests
// (concurrency 32 over 8 connections ran at 2.88x the latency-bound minimum).
describe('connections per domain', () => {
  it('follow --concurrency unless set', () => {
    expect(resolveRunConfig(undefined, { api_url: 'http://127.0.0.1:9', concurrency: 32 }).connectionsPerDomain).toBe(64);
    expect(resolveRunConfig(undefined, { api_url: 'http://127.0.0.1:9', concurrency: 2 }).connectionsPerDomain).toBe(8);
    expect(
      resolveRunConfig(undefined, { api_url: 'http://127.0.0.1:9', concurrency: 32, connections_per_domain: 4 }).connectionsPerDomain,
    ).toBe(4);
  });
});
