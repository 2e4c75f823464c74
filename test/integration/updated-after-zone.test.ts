import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { ApiClient } from '../../src/source/client.ts';
import { updatedAfterParam } from '../../src/manifest/state.ts';
import { convertDatetime } from '../../src/flatten/index.ts';

/**
 * The spec does not say how the service reads a naive updated_after. We send naive UTC; this
 * proves that whether the server reads it as UTC or as Europe/London wall time (an hour ahead in
 * summer), every row changed after the watermark is returned: London only widens the window.
 */
const BIG = 'A1001';
// Base rows of the sandbox's achievements start 2024-01-10 and are 20 s apart: 420,000 rows reach
// past the start of British Summer Time (2024-03-31), so the watermark below is a BST instant.
const WATERMARK = '2024-04-15T12:00:00.000Z';

async function idsAfter(sb: Sandbox, param: string): Promise<{ ids: Set<string>; updated: string[] }> {
  const client = new ApiClient({ apiUrl: sb.url, token: sb.tokens.full, domains: sb.domains });
  try {
    const ids = new Set<string>();
    const updated: string[] = [];
    for await (const b of client.paginate(`/schools/${BIG}/achievements`, { query: { updated_after: param }, perPage: 1000 })) {
      for (const r of b.rows as { id: string; updated_at: unknown }[]) {
        ids.add(r.id);
        updated.push(String(convertDatetime(r.updated_at).instant ?? ''));
      }
    }
    return { ids, updated };
  } finally {
    await client.close();
  }
}

describe('updated_after time zone', () => {
  let utc: Sandbox;
  let london: Sandbox;
  beforeAll(async () => {
    utc = await startSandbox({ seed: 3, schools: 1, bigSchools: { [BIG]: 420_000 }, updatedAfterZone: 'UTC' });
    london = await startSandbox({ seed: 3, schools: 1, bigSchools: { [BIG]: 420_000 }, updatedAfterZone: 'Europe/London' });
  });
  afterAll(async () => {
    await utc?.close();
    await london?.close();
  });

  it('returns every row changed after the watermark whichever way the server reads the value', async () => {
    const param = updatedAfterParam(WATERMARK, 0);
    expect(param).toBe('2024-04-15 12:00:00');
    const a = await idsAfter(utc, param);
    const b = await idsAfter(london, param);
    // Read as UTC: exactly the rows after the watermark.
    expect(a.ids.size).toBeGreaterThan(1000);
    expect(a.updated.every((u) => u > WATERMARK)).toBe(true);
    // Read as London wall time (BST, UTC+1): the window starts an hour earlier, a superset.
    for (const id of a.ids) expect(b.ids.has(id)).toBe(true);
    expect(b.ids.size).toBeGreaterThan(a.ids.size);
    expect(b.updated.some((u) => u <= WATERMARK && u > '2024-04-15T11:00:00')).toBe(true);
    expect(b.updated.every((u) => u > '2024-04-15T11:00:00')).toBe(true);
  });

  it('an explicit Z would be honoured by the sandbox, so the naive form is the one whose reading matters', async () => {
    const a = await idsAfter(london, '2024-04-15T12:00:00Z');
    const b = await idsAfter(utc, updatedAfterParam(WATERMARK, 0));
    expect([...a.ids].sort()).toEqual([...b.ids].sort());
  });
});
