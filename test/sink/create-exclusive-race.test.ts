import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalSink } from '../../src/sink/local.ts';
import { realIo } from '../../src/sink/local-io.ts';

/**
 * A run writes its lease's temp file before it holds the lease, so another run's sweep of dead
 * runs' temp files can remove it between its write and its link (seen with shards started
 * together): the lease is then written again, not refused with ENOENT.
 */
describe('createExclusive when its temp file is swept meanwhile', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'create-exclusive-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('writes the temp file again and creates the file', async () => {
    let swept = 0;
    const io = {
      ...realIo,
      // right after the temp file is written and synced, before its link: what a sweep would do
      fsyncFile: async (fh: Parameters<typeof realIo.fsyncFile>[0], file: string) => {
        await realIo.fsyncFile(fh, file);
        if (swept++ === 0) await rm(file);
      },
    };
    const sink = new LocalSink(dir, { io, owner: 'run-b' });
    expect(await sink.createExclusive('_state/_locks/run.json', '{"run_id":"b"}')).toBe(true);
    expect(swept).toBe(2);
    expect(readFileSync(join(dir, '_state/_locks/run.json'), 'utf8')).toBe('{"run_id":"b"}');
    expect(readdirSync(join(dir, '_state/_locks'))).toEqual(['run.json']);
  });
});
