#!/usr/bin/env node
// The installed command runs the compiled dist/ (its bundle, when built) with plain Node: that is all a production install
// (a packed tarball, `npm install --omit=dev`) has and needs. In a development checkout, when
// dist/ is missing or older than any source file, tsx (a dev dependency) runs the TypeScript
// sources instead, so an edited checkout never runs stale code.
import { existsSync, readdirSync, statSync } from 'node:fs';
import module from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// Node 22.1+: compiled code of our modules and dependencies is cached on disk (the OS temp dir) and
// reused by the next start, which then skips most of the parsing and compiling (a night of many
// short runs pays it once). Node 20 has no such cache: nothing happens there.
module.enableCompileCache?.();

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const compiled = join(root, 'dist/cli/main.js');
// the same code bundled (bin/prepare.js): fewer files to load at each start; built with dist/
const bundled = join(root, 'dist/bundle/main.js');
const sources = join(root, 'src');

function newestSource(dir) {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    newest = Math.max(newest, e.isDirectory() ? newestSource(p) : statSync(p).mtimeMs);
  }
  return newest;
}

const hasSources = existsSync(sources);
if (existsSync(compiled) && (!hasSources || statSync(compiled).mtimeMs >= newestSource(sources))) {
  await import(existsSync(bundled) && statSync(bundled).mtimeMs >= statSync(compiled).mtimeMs ? bundled : compiled);
} else {
  let register;
  try {
    ({ register } = await import('tsx/esm/api'));
  } catch {
    process.stderr.write(
      existsSync(compiled)
        ? 'school-export: dist/ is older than src/ and tsx (a dev dependency) is not installed: run `npm run build`\n'
        : 'school-export: dist/ is not built. Install a packed tarball (`npm pack` on a build machine), or in a clone run `npm ci && npm prune --omit=dev` (npm ci builds dist/)\n',
    );
    process.exit(2);
  }
  register();
  await import('../src/cli/main.ts');
}
