import { spawn } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.ts';
import { exportOnce } from '../integration/helpers.ts';
import { missingLines, readExamples, type Example } from './examples.ts';

/**
 * Every shell example of README.md and docs/*.md runs against the sandbox (the convention is in
 * examples.ts). A doc whose example fails, prints an empty result, or no longer prints what its
 * `text output` block shows fails here, naming the file and line.
 */
const ROOT = resolve(import.meta.dirname, '../..');
const BIN = join(ROOT, 'bin/school-export.js');
const examples = readExamples(ROOT);
const byFile = new Map<string, Example[]>();
for (const e of examples) byFile.set(e.file, [...(byFile.get(e.file) ?? []), e]);

/** What a placeholder stands for, in the sandbox the examples run against. */
function placeholders(sb: Sandbox): [string, string][] {
  const d = sb.domains;
  const apac = d['api-apac.sandbox.test']!;
  const africa = d['api-africa.sandbox.test']!;
  return [
    ['https://<default domain>', sb.url],
    ['<apac domain>=https://<apac domain>', `api-apac.sandbox.test=${apac}`],
    ['<africa domain>=https://<africa domain>', `api-africa.sandbox.test=${africa}`],
    ['<sandbox url>', sb.url],
    ['<apac url>', apac],
    ['<africa url>', africa],
    ['<full token printed by the sandbox>', sb.tokens.full],
    ['<full token>', sb.tokens.full],
    ['SCHOOL_API_TOKEN=...', `SCHOOL_API_TOKEN=${sb.tokens.full}`],
  ];
}

export function substitute(body: string, table: [string, string][], where: string): string {
  let out = body;
  for (const [from, to] of table) out = out.split(from).join(to);
  // a placeholder left in a command (comments may mention <things>)
  const commands = out
    .split('\n')
    .map((l) => l.replace(/(^|\s)#.*$/, ''))
    .join('\n');
  const unknown = /<[a-z][a-z0-9 _.-]*>/i.exec(commands);
  if (unknown)
    throw new Error(
      `${where}: unknown placeholder ${unknown[0]}: add it to the table in test/docs/examples.test.ts or mark the block \`no-run <why>\``,
    );
  return out;
}

const MARK = '@@docs-example@@';

function script(list: Example[], table: [string, string][]): string {
  const parts = ['set -euo pipefail'];
  list.forEach((e, i) => {
    parts.push(`echo '${MARK}${i}'`);
    parts.push(substitute(e.body, table, `${e.file}:${e.line}`));
  });
  parts.push(`echo '${MARK}end'`);
  return parts.join('\n') + '\n';
}

/** The terminal's output, per example. */
function split(text: string): Map<string, string> {
  const out = new Map<string, string>();
  let key = 'pre';
  // colours (jq on a terminal) are not part of the text
  for (const line of text
    .replace(/\r/g, '')
    .replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '')
    .split('\n')) {
    if (line.startsWith(MARK)) key = line.slice(MARK.length);
    else out.set(key, (out.get(key) ?? '') + line + '\n');
  }
  return out;
}

/**
 * Runs the examples on a terminal, as a reader would type them (`script` gives them a pty: tables,
 * not NDJSON, unless an example pipes), stdout and stderr together, as on a screen.
 */
async function bash(file: string, cwd: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  const child = spawn('script', ['-qefc', `bash ${file}`, '/dev/null'], { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
  child.stdin.end();
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  // a runaway example (a server that never stops) is ended, and the test says which one
  const timer = setTimeout(() => child.kill('SIGKILL'), 240_000);
  const code = await new Promise<number | null>((res) => child.once('close', (c) => res(c)));
  clearTimeout(timer);
  return { code, output };
}

describe('documentation examples', () => {
  let template: string;
  let shims: string;

  beforeAll(async () => {
    template = mkdtempSync(join(tmpdir(), 'docs-template-'));
    const sb = await startSandbox({ seed: 1 });
    try {
      const s = await exportOnce(sb, join(template, 'exports'));
      if (s.status !== 'ok') throw new Error(`the sandbox export for the docs examples failed: ${JSON.stringify(s)}`);
    } finally {
      await sb.close();
    }
    cpSync(join(ROOT, 'pipelines'), join(template, 'pipelines'), { recursive: true });
    cpSync(join(ROOT, 'samples'), join(template, 'samples'), { recursive: true });
    shims = join(template, '.bin');
    mkdirSync(shims);
    writeFileSync(join(shims, 'school-export'), `#!/bin/sh\nexec "${process.execPath}" "${BIN}" "$@"\n`);
    writeFileSync(
      join(shims, 'npx'),
      `#!/bin/sh\nif [ "$1" = school-export ]; then shift; exec "${process.execPath}" "${BIN}" "$@"; fi\necho "docs examples run school-export only, not npx $1" >&2\nexit 127\n`,
    );
    chmodSync(join(shims, 'school-export'), 0o755);
    chmodSync(join(shims, 'npx'), 0o755);
  }, 120_000);

  afterAll(() => {
    if (template) rmSync(template, { recursive: true, force: true });
  });

  it('every example that does not run says why (the list is printed)', () => {
    const skipped = examples.filter((e) => !e.run);
    for (const e of skipped) expect(e.reason, `${e.file}:${e.line}: \`no-run\` needs a reason`).toMatch(/\S/);
    console.log(['documentation examples not run:', ...skipped.map((e) => `  ${e.file}:${e.line}  ${e.reason}`)].join('\n'));
    expect(examples.filter((e) => e.run).length).toBeGreaterThan(5);
  });

  for (const [file, list] of byFile) {
    const runnable = list.filter((e) => e.run);
    if (!runnable.length) continue;
    it(`${file}: ${runnable.length} example block(s) run against the sandbox`, async () => {
      const cwd = mkdtempSync(join(tmpdir(), 'docs-run-'));
      const sb = await startSandbox({ seed: 1 });
      try {
        cpSync(template, cwd, { recursive: true });
        const scriptFile = join(cwd, '.examples.sh');
        writeFileSync(scriptFile, script(runnable, placeholders(sb)));
        const env: NodeJS.ProcessEnv = {
          PATH: `${join(cwd, '.bin')}:${process.env.PATH ?? ''}`,
          HOME: cwd,
          LANG: 'C.UTF-8',
          SCHOOL_API_TOKEN: sb.tokens.full,
          SCHOOL_EXPORT_API_URL: sb.url,
          SCHOOL_EXPORT_DOMAINS: Object.entries(sb.domains)
            .map(([k, v]) => `${k}=${v}`)
            .join(','),
          SCHOOL_EXPORT_DEST: './exports',
          SCHOOL_EXPORT_PROGRESS: 'none',
        };
        const r = await bash(scriptFile, cwd, env);
        const out = split(r.output);
        const reached = [...out.keys()].filter((k) => /^\d+$/.test(k)).map(Number);
        const last = runnable[Math.max(0, ...reached)]!;
        const detail = (i: number) => `\n--- output\n${(out.get(String(i)) ?? '').slice(-4000)}`;
        if (r.code !== 0 || !out.has('end')) {
          throw new Error(
            `${last.file}:${last.line}: the example exited ${r.code ?? 'on a signal (timeout?)'}${detail(runnable.indexOf(last))}`,
          );
        }
        runnable.forEach((e, i) => {
          const text = out.get(String(i)) ?? '';
          // a listing that matches nothing in the sandbox documents nothing
          const empty = /^0 \w+ schools?$/m.exec(text);
          expect(
            empty,
            `${e.file}:${e.line}: the example printed an empty result ("${empty?.[0]}"): use ids and codes the sandbox has${detail(i)}`,
          ).toBeNull();
          if (e.expected !== undefined) {
            expect(
              missingLines(e.expected, text),
              `${e.file}:${e.line}: lines of its \`text output\` block not printed${detail(i)}`,
            ).toEqual([]);
          }
        });
      } finally {
        await sb.close();
        rmSync(cwd, { recursive: true, force: true });
      }
    }, 300_000);
  }
});
