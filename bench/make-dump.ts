/**
 * Records a replay-front dump for stage work: `node bin/run-ts.js bench/make-dump.ts OUT [schools] [rows] [standard|wide]`.
 * One warm export of achievements (with students and employees) through the front, then the
 * front's stored gzip bodies are written to OUT (the format bench/stages.ts and the raw-dump script read).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runChild, startSandboxProc } from './procs.ts';
import type { ChildResult } from './child-types.ts';

const [out, schools = '2', rows = '25000', shape = 'standard'] = process.argv.slice(2);
if (!out || (shape !== 'standard' && shape !== 'wide')) throw new Error('usage: bench/make-dump.ts OUT [schools] [rows] [standard|wide]');
const sb = await startSandboxProc(
  { seed: 1, schools: Number(schools), achievementsPerSchool: Number(rows), maxPerPage: 1000, dataShape: shape },
  true,
);
const dest = await mkdtemp(join(tmpdir(), 'dump-'));
try {
  const r = await runChild<ChildResult>('export-child.mjs', {
    apiUrl: sb.url,
    domains: sb.domains,
    token: sb.token,
    dest,
    format: 'ndjson',
    resources: ['achievements'],
  });
  if (r.status !== 'ok') throw new Error(`warm-up failed: ${JSON.stringify(r.failures)}`);
  process.stdout.write(JSON.stringify(await sb.command({ cmd: 'dump', file: out })) + '\n');
} finally {
  await sb.close();
  await rm(dest, { recursive: true, force: true });
}
