import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { localFiles } from '../../src/warehouse/fetch-file.ts';
import type { WarehouseSource } from '../../src/warehouse/manifests.ts';

// Copies of a remote destination's files go under os.tmpdir(); this test gives them its own.
let tmp: string;
let saved: string | undefined;
beforeEach(() => {
  saved = process.env.TMPDIR;
  tmp = mkdtempSync(join(tmpdir(), 'fetch-file-'));
  process.env.TMPDIR = tmp;
});
afterEach(() => {
  if (saved === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = saved;
  rmSync(tmp, { recursive: true, force: true });
});

const remote = (files: Record<string, string>): WarehouseSource => ({
  read: async (p) => (p in files ? Buffer.from(files[p]!) : undefined),
  list: async () => Object.keys(files),
});
const sha = (s: string) => createHash('sha256').update(s).digest('hex');

describe('local copies of a remote destination', () => {
  it('copies files fetched at once into one directory, and close() leaves nothing behind', async () => {
    const content = Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`a/f${i}.ndjson`, `row ${i}\n`]));
    const files = localFiles(remote(content), { verify: true });
    const got = await Promise.all(Object.entries(content).map(([path, c]) => files.get({ path, sha256: sha(c) })));
    expect(got.map((g) => readFileSync(g.path, 'utf8'))).toEqual(Object.values(content));
    expect(readdirSync(tmp)).toHaveLength(1);
    await files.close();
    expect(readdirSync(tmp)).toEqual([]);
  });

  it('refuses a copy whose checksum differs from its manifest, and removes it', async () => {
    const files = localFiles(remote({ 'a/f.ndjson': 'changed\n' }), { verify: true });
    await expect(files.get({ path: 'a/f.ndjson', sha256: sha('original\n') })).rejects.toThrow(/does not match the checksum/);
    await files.close();
    expect(readdirSync(tmp)).toEqual([]);
  });
});
