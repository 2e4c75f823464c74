import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The shell examples of README.md and docs/*.md, as the docs test runs them (node-csv's samples
 * run as tests: documentation that cannot rot). The convention, for anyone writing docs:
 *
 * - A fenced block whose language is `sh`, `bash` or `shell` is an example and is RUN, in order
 *   with the other examples of the same file, by one bash (`set -euo pipefail`): a variable set in
 *   one block is there in the next. Every command must exit 0.
 * - An example that cannot run in a test (a real cloud, a server that runs until stopped, a tool
 *   that is not installed here) says so in its info string: ```` ```sh no-run <why> ````.
 *   The reason is required; the docs test lists every such block with its reason.
 * - A block ```` ```text output ```` right after an example is what that example prints: each of
 *   its non-blank lines must appear in the output (spaces collapsed; `…` matches anything).
 * - Placeholders in `<angle brackets>` are replaced (see PLACEHOLDERS in examples.test.ts);
 *   an unknown one fails the test, so add it there or mark the block no-run.
 * - What the examples run against: a sandbox started for each file (seed 1, the CLI's
 *   defaults); SCHOOL_API_TOKEN holds its full token; SCHOOL_EXPORT_API_URL and
 *   SCHOOL_EXPORT_DOMAINS point at it and SCHOOL_EXPORT_DEST is ./exports, so commands without
 *   --api-url, and pipeline files meant for the real service, reach the sandbox and write locally
 *   (the environment wins over a pipeline file, flags win over the environment);
 *   `school-export` and `npx school-export` run this checkout; the working directory is a fresh
 *   temporary one holding copies of pipelines/ and samples/, and ./exports with one export of
 *   the sandbox in it.
 */
export interface DocBlock {
  file: string;
  line: number;
  lang: string;
  info: string;
  body: string;
}

export interface Example extends DocBlock {
  run: boolean;
  /** For no-run blocks: why. */
  reason?: string;
  /** The ```text output block that follows, if any. */
  expected?: string;
}

const SHELL = new Set(['sh', 'bash', 'shell']);

export function docFiles(root: string): string[] {
  return [
    'README.md',
    ...readdirSync(join(root, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .sort()
      .map((f) => `docs/${f}`),
  ];
}

export function fencedBlocks(file: string, text: string): DocBlock[] {
  const out: DocBlock[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    // fences may be indented (a block inside a list item); the body loses that indent
    const open = /^(\s*)(`{3,}|~{3,})\s*([\w-]*)\s*(.*)$/.exec(lines[i]!);
    if (!open) continue;
    const [, indent, fence] = open as unknown as [string, string, string];
    const body: string[] = [];
    let j = i + 1;
    while (j < lines.length && lines[j]!.trim() !== fence) body.push(lines[j++]!);
    const strip = (l: string) => (l.startsWith(indent) ? l.slice(indent.length) : l.trimStart());
    out.push({ file, line: i + 1, lang: open[3]!.toLowerCase(), info: open[4]!.trim(), body: body.map(strip).join('\n') });
    i = j;
  }
  return out;
}

export function examplesOf(file: string, text: string): Example[] {
  const blocks = fencedBlocks(file, text);
  const out: Example[] = [];
  blocks.forEach((b, k) => {
    if (!SHELL.has(b.lang)) return;
    const noRun = /^no-run\b\s*(.*)$/.exec(b.info);
    const next = blocks[k + 1];
    const expected = next && ['text', 'console'].includes(next.lang) && next.info === 'output' ? next.body : undefined;
    out.push({ ...b, run: !noRun, ...(noRun ? { reason: noRun[1]!.trim() } : {}), ...(expected !== undefined ? { expected } : {}) });
  });
  return out;
}

export function readExamples(root: string): Example[] {
  return docFiles(root).flatMap((f) => examplesOf(f, readFileSync(join(root, f), 'utf8')));
}

const squash = (s: string) => s.replace(/\s+/g, ' ').trim();

/** The expected lines not found in the output (spaces collapsed; `…` matches anything). */
export function missingLines(expected: string, actual: string): string[] {
  const got = actual.split('\n').map(squash);
  return expected
    .split('\n')
    .map(squash)
    .filter(Boolean)
    .filter((line) => {
      const re = new RegExp(
        '^' +
          line
            .split('…')
            .map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
            .join('.*') +
          '$',
      );
      return !got.some((g) => re.test(g));
    });
}
