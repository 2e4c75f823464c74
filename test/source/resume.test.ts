import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { ApiClient, type ClientEvent } from '../../src/source/client.ts';
import { rowKeyOf } from '../../src/source/row-key.ts';

/**
 * Issue 9 item 1.1: a page parsed incrementally that fails mid-body is fetched again. Rows the
 * first attempt already emitted must be recognised by identity, not by count: when rows were
 * deleted upstream between the two requests, the second response starts at different rows.
 */
const SCHOOL = 'A1002';
const ROWS = 6000;
const PER_PAGE = 5000; // one page of 5,000 rows (streamed in batches of 1,000), then one of 1,000
const DELETED = 300;
let sb: Sandbox;
let domain: string;

beforeAll(async () => {
  sb = await startSandbox({ schools: 3, achievementsPerSchool: 10, bigSchools: { [SCHOOL]: ROWS }, maxPerPage: PER_PAGE });
  const c = new ApiClient({ apiUrl: sb.url, token: sb.tokens.full, domains: sb.domains });
  const schools = await c.getJson<{ data: { id: string; region: { domain: string } }[] }>('/schools');
  await c.close();
  domain = schools.body.data.find((s) => s.id === SCHOOL)!.region.domain;
});
afterAll(async () => {
  await sb?.close();
});

const idOf = (r: unknown) => (r as { id: string }).id;

/**
 * Walks the school's achievements while the first page is cut mid-body (after some batches were
 * emitted); when the client announces its retry, the first DELETED rows it already emitted are
 * deleted upstream, before the page is fetched again.
 */
async function walkWithDeletionsBeforeRetry(rowKey: ((row: unknown) => string | undefined) | undefined) {
  const before = sb.control.records(SCHOOL, 'achievements').map(idOf);
  sb.control.fault({ kind: 'truncated-gzip', path: `/schools/${SCHOOL}/achievements?`, times: 1 });
  const got: string[] = [];
  let emittedBeforeRetry = -1;
  let deleted: string[] = [];
  const c = new ApiClient({
    apiUrl: sb.url,
    token: sb.tokens.full,
    domains: sb.domains,
    retry: { baseDelayMs: 1, maxDelayMs: 5 },
    streamThresholdBytes: 32 * 1024,
    onEvent: (e: ClientEvent) => {
      if (e.type !== 'retry' || emittedBeforeRetry >= 0) return;
      emittedBeforeRetry = got.length;
      deleted = got.slice(0, DELETED);
      for (const id of deleted) sb.control.remove(SCHOOL, 'achievements', id);
    },
  });
  try {
    for await (const b of c.paginate(`/schools/${SCHOOL}/achievements`, { domain, perPage: PER_PAGE, rowKey })) {
      got.push(...b.rows.map(idOf));
    }
  } finally {
    await c.close();
    for (const id of deleted) sb.control.restore(SCHOOL, 'achievements', id);
  }
  return { before, got, emittedBeforeRetry, deleted };
}

describe('a page fetched again after a mid-body failure', () => {
  it('resumes by row identity: deletions between the attempts lose no row and repeat none', async () => {
    const { before, got, emittedBeforeRetry, deleted } = await walkWithDeletionsBeforeRetry(idOf);
    expect(emittedBeforeRetry).toBeGreaterThanOrEqual(DELETED); // rows had left the first attempt before the cut
    expect(deleted).toHaveLength(DELETED);
    expect(new Set(got).size).toBe(got.length);
    // every row that existed throughout arrived; the deleted ones arrived once, from the first attempt
    expect(got.slice().sort()).toEqual(before.slice().sort());
  });

  it('without a key function it re-emits the whole page: duplicates, never a loss', async () => {
    const { before, got, emittedBeforeRetry } = await walkWithDeletionsBeforeRetry(undefined);
    expect(emittedBeforeRetry).toBeGreaterThan(0);
    expect(new Set(got)).toEqual(new Set(before));
    expect(got.length).toBe(before.length - DELETED + emittedBeforeRetry);
  });
});

describe('rowKeyOf', () => {
  it('builds single and composite keys; a missing part means no key', () => {
    expect(rowKeyOf([])).toBeUndefined();
    const one = rowKeyOf(['id'])!;
    expect(one({ id: 7 })).toBe('7');
    expect(one({ id: null })).toBeUndefined();
    const two = rowKeyOf(['a', 'b'])!;
    expect(two({ a: 'x', b: 'y,z' })).not.toBe(two({ a: 'x,y', b: 'z' }));
    expect(two({ a: 'x' })).toBeUndefined();
  });
});
