/**
 * The benchmark's sandbox, in its own process so its CPU does not count against the exporter.
 * Usage: node bin/run-ts.js bench/sandbox-server.ts '{"sandbox": SandboxOptions, "front": boolean}'
 * Prints one JSON line {url, domains, token, sandbox} once listening: url/domains are the replay
 * front's when `front` is set (see replay-front.ts), else the sandbox's; `sandbox` is the sandbox's
 * own default URL (its /_control API). Reads JSON commands, one a line, on stdin, each answered
 * with one JSON line:
 * - {"cmd":"dump","file":PATH} → {"pages":N,"bytes":N}
 * - {"cmd":"latency","ms":N}: delay before every /v1.0 answer
 * - {"cmd":"requests"} → {"requests":N,"windows":{"after..before":N},"probes":N}: /v1.0 requests
 *   since the last {"cmd":"reset"}, those carrying updated_after/before by window, and the
 *   one-row probes
 * - without the front, {"cmd":"requests"} → {"requests":N}: API requests the sandbox logged since
 *   the last {"cmd":"reset"} (which empties its log)
 * - {"cmd":"touch","schools":N} → {"changed":N,"pairs":N}: the first achievement of each approved
 *   school A1001..A(1000+N) changed (a new comment); pairs: the (school, table) pairs that touches
 *   (achievements, and achievement_students / _employees where the row embeds any)
 * Stops when stdin closes (parent gone) or on SIGTERM.
 */
import { createInterface } from 'node:readline';
import { startSandbox, type SandboxOptions } from '../src/sandbox/index.ts';
import { startFront, type Front } from './replay-front.ts';

const args = JSON.parse(process.argv[2] ?? '{}') as { sandbox?: SandboxOptions; front?: boolean };
const sb = await startSandbox(args.sandbox ?? {});
let front: Front | undefined;
let domains = sb.domains;
let url = sb.url;
if (args.front) {
  front = await startFront(sb.regions.map((r) => r.url));
  domains = Object.fromEntries(Object.entries(sb.domains).map(([d, u]) => [d, front!.origins.get(u)!]));
  url = front.origins.get(sb.url)!;
}
process.stdout.write(JSON.stringify({ url, domains, token: sb.tokens.full, sandbox: sb.url }) + '\n');

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await front?.close();
  await sb.close();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
const lines = createInterface({ input: process.stdin });
lines.on('line', async (line) => {
  const cmd = JSON.parse(line) as { cmd: string; file?: string; ms?: number };
  let answer: unknown = { error: `unknown command ${cmd.cmd} (or no front)` };
  if (front && cmd.cmd === 'dump' && cmd.file) answer = await front.dump(cmd.file);
  if (front && cmd.cmd === 'latency') answer = { latencyMs: (front.latencyMs = Number(cmd.ms)) };
  if (front && cmd.cmd === 'requests')
    answer = { requests: front.requests, windows: Object.fromEntries(front.windows), probes: front.probes };
  if (front && cmd.cmd === 'reset') {
    front.windows.clear();
    front.probes = 0;
    answer = { requests: (front.requests = 0) };
  }
  if (!front && cmd.cmd === 'requests') answer = { requests: sb.control.requests().length };
  if (!front && cmd.cmd === 'reset') {
    sb.control.clearRequests();
    answer = { requests: 0 };
  }
  if (cmd.cmd === 'touch') answer = touchEach(Number((cmd as { schools?: number }).schools));
  process.stdout.write(JSON.stringify(answer) + '\n');
});

function touchEach(schools: number): { changed: number; pairs: number } {
  let changed = 0;
  let pairs = 0;
  for (let s = 1; s <= schools; s++) {
    const id = `A${1000 + s}`;
    const first = sb.control.records(id, 'achievements')[0] as {
      id: string;
      students?: { data: unknown[] };
      employees?: { data: unknown[] };
    };
    if (!first) continue;
    const row = sb.control.update(id, 'achievements', first.id, { comment: `changed by the benchmark at ${new Date().toISOString()}` });
    changed++;
    pairs += 1 + (first.students?.data.length ? 1 : 0) + (first.employees?.data.length ? 1 : 0);
    void row;
  }
  return { changed, pairs };
}
lines.on('close', stop);
