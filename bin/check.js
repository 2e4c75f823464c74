#!/usr/bin/env node
// The static checks of `npm test` (typecheck, ESLint, Prettier), side by side: one after another
// they took 83 s on a 2-core machine, side by side 69 s (each uses a core and a bit: 118 s of CPU
// in all). A check's output is printed when it fails, under its name; any failure fails all.
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
    let ended = false;
    const end = (ok, how) => {
      if (ended) return; // a child that failed to start may report both 'error' and 'close'
      ended = true;
      const took = ((Date.now() - started) / 1000).toFixed(1);
      process.stdout.write(`${name}: ${ok ? 'passed' : `failed (${how})`} in ${took} s\n${ok ? '' : out}`);
      resolve({ name, ok });
    };
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('error', (e) => end(false, `${cmd} did not start: ${e.message}`));
    child.on('close', (code, signal) => end(code === 0, signal ?? `exit ${code}`));
  });
}

const results = await Promise.all(checks.map(run));
const failed = results.filter((r) => !r.ok).map((r) => r.name);
if (failed.length) {
  console.error(`check: ${failed.join(', ')} failed`);
  process.exit(1);
}
