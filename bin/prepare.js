#!/usr/bin/env node
// Compiles src/ to dist/, which is what the installed command runs.
//
// - `prepare` (on `npm ci` / `npm install` in a checkout): builds so the command starts fast and
//   light. Never fails the install: without TypeScript (`npm ci --omit=dev` in a clone) it says
//   dist/ is not built; bin/school-export.js then runs the sources through tsx when tsx is there.
// - `prepack` (`node bin/prepare.js --pack`, on `npm pack` / `npm publish`): removes dist/ and
//   builds it afresh, failing the pack on any error, so a tarball never ships stale or missing code;
//   and ships the lockfile as npm-shrinkwrap.json, so a server's `npm ci --omit=dev` in the unpacked
//   tarball installs exactly the dependency versions the tests ran with.
// - `postpack` (`node bin/prepare.js --postpack`): removes that npm-shrinkwrap.json again.
// - In an installed package (dist/ shipped, no src/) there is nothing to build.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const forPack = process.argv.includes('--pack');
const shrinkwrap = join(root, 'npm-shrinkwrap.json');
if (process.argv.includes('--postpack')) {
  rmSync(shrinkwrap, { force: true });
  process.exit(0);
}
if (!existsSync(join(root, 'src')) && existsSync(join(root, 'dist/cli/main.js'))) process.exit(0);
// npm runs both prepack and prepare on `npm pack`: the prepack build is the one that counts
if (!forPack && ['pack', 'publish'].includes(process.env.npm_command ?? '')) process.exit(0);

let tsc;
try {
  tsc = createRequire(join(root, 'package.json')).resolve('typescript/bin/tsc');
} catch {
  if (forPack) {
    console.error('school-export: cannot pack: TypeScript (a dev dependency) is needed to build dist/: run `npm ci` first');
    process.exit(1);
  }
  console.error(
    'school-export: TypeScript is not installed (--omit=dev), so dist/ was not built. For a production install use a packed tarball (npm pack), or `npm ci && npm prune --omit=dev`.',
  );
  process.exit(0);
}
if (forPack) {
  rmSync(join(root, 'dist'), { recursive: true, force: true });
  copyFileSync(join(root, 'package-lock.json'), shrinkwrap);
}
const r = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
if (r.status !== 0) {
  console.error(`school-export: building dist/ failed${forPack ? '' : '; the command will run from src/ through tsx'}`);
  if (forPack) process.exit(1);
} else {
  // the pipeline file's validator as code (src/config/validator-code.ts): no ajv compile at each start
  const { validatorModule } = await import(pathToFileURL(join(root, 'dist/config/validator-code.js')).href);
  writeFileSync(
    join(root, 'dist/config/pipeline-validate.cjs'),
    validatorModule(readFileSync(join(root, 'schema/pipeline.schema.json'), 'utf8')),
  );
}
