#!/usr/bin/env node
// The static checks of `npm test` (typecheck, ESLint, Prettier), side by side: each uses one core
// for most of its run, so on a 2-core machine one after another left a core idle for over a
// minute. Each one's output is printed whole when it ends, under its name; any failure fails all.
import { spawn } from 'node:child_process';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const env = { ...process.env, PATH: [join(root, 'node_modules/.bin'), process.env.PATH].join(delimiter) };
const checks = [
  ['typecheck', 'tsc', ['--noEmit']],
  ['eslint', 'eslint', ['.']],
  ['prettier', 'prettier', ['--check', '.']],
];

function run([name, cmd, args]) {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('error', (e) => resolve({ name, ok: false, out: `${out}${e.message}\n` }));
    child.on('close', (code, signal) => {
      const ok = code === 0;
      const took = ((Date.now() - started) / 1000).toFixed(1);
      process.stdout.write(`${name}: ${ok ? 'passed' : `failed (${signal ?? `exit ${code}`})`} in ${took} s\n${ok ? '' : out}`);
      resolve({ name, ok });
    });
  });
}

const results = await Promise.all(checks.map(run));
const failed = results.filter((r) => !r.ok).map((r) => r.name);
if (failed.length) {
  console.error(`check: ${failed.join(', ')} failed`);
  process.exit(1);
}
