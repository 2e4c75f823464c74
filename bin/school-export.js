#!/usr/bin/env node
// The installed command. `npm ci` compiles src/ to dist/ (the "prepare" script), and plain Node
// runs that: about 30 MB less memory and a faster start than compiling on the fly. When dist/
// is missing or older than any source file (a developer editing src/), tsx's loader runs the
// TypeScript sources directly instead, so the command is never stale.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// The AWS SDK warns on Node 20 about versions it will publish in 2027; our lockfile pins the
// SDK, and a multi-line warning would break the one-JSON-object-per-line logs cron users parse.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const compiled = join(root, 'dist/cli/main.js');

function newestSource(dir) {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    newest = Math.max(newest, e.isDirectory() ? newestSource(p) : statSync(p).mtimeMs);
  }
  return newest;
}

if (existsSync(compiled) && statSync(compiled).mtimeMs >= newestSource(join(root, 'src'))) {
  await import(compiled);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli/main.ts');
}
