/**
 * Summarises V8 .cpuprofile files (from `npm run bench -- --profile`, or node --cpu-prof):
 * self time per function and per source file, largest first.
 * Usage: node bin/run-ts.js bench/profile-summary.ts FILE.cpuprofile [TOP]
 */
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}
interface Profile {
  nodes: Node[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export function summarise(p: Profile, top = 25): string {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  for (let i = 0; i < p.samples.length; i++) self.set(p.samples[i]!, (self.get(p.samples[i]!) ?? 0) + (p.timeDeltas[i] ?? 0));
  const total = (p.endTime - p.startTime) / 1000;
  const fn = new Map<string, number>();
  const file = new Map<string, number>();
  for (const [id, us] of self) {
    const n = byId.get(id)!;
    const url = n.callFrame.url.replace(/^file:\/\/.*?\/(src|bench|node_modules)\//, '$1/') || '(native)';
    const name = `${n.callFrame.functionName || '(anonymous)'}  ${url}:${n.callFrame.lineNumber + 1}`;
    fn.set(name, (fn.get(name) ?? 0) + us / 1000);
    const f = url.startsWith('node_modules/')
      ? url
          .split('/')
          .slice(0, url.startsWith('node_modules/@') ? 3 : 2)
          .join('/')
      : url;
    file.set(f, (file.get(f) ?? 0) + us / 1000);
  }
  const fmt = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, ms]) => `${ms.toFixed(0).padStart(7)} ms ${((ms / total) * 100).toFixed(1).padStart(5)}%  ${k}`)
      .join('\n');
  return `profile: ${total.toFixed(0)} ms\n\nself time by function:\n${fmt(fn)}\n\nself time by file:\n${fmt(file)}\n`;
}

if (process.argv[2]) {
  const p = JSON.parse(readFileSync(process.argv[2], 'utf8')) as Profile;
  process.stdout.write(summarise(p, Number(process.argv[3] ?? 25)));
}
