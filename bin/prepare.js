#!/usr/bin/env node
// Runs on `npm ci` / `npm install` ("prepare"): compiles src/ to dist/ so the command starts fast
// and light. Never fails the install: without TypeScript (a production install with
// --omit=dev) or on a compile problem, bin/school-export.js runs the sources through tsx instead.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
let tsc;
try {
  tsc = createRequire(join(root, 'package.json')).resolve('typescript/bin/tsc');
} catch {
  console.error('school-export: TypeScript is not installed (production install); the command will run from src/ through tsx');
  process.exit(0);
}
const r = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
if (r.status !== 0) console.error('school-export: building dist/ failed; the command will run from src/ through tsx');
