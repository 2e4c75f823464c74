#!/usr/bin/env node
// Runs a TypeScript entry point through tsx's loader, so the package works right after
// `npm ci` with no build step and no global install (Node 20 cannot strip types itself).
import { register } from 'tsx/esm/api';
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';

register();
const entry = process.argv[2];
if (!entry) {
  console.error('usage: run-ts.js FILE.ts [args...]');
  process.exit(2);
}
process.argv.splice(2, 1);
await import(pathToFileURL(resolve(entry)).href);
