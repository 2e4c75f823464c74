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
// - After tsc, the command is bundled (dist/bundle/, by esbuild, a dev dependency): a start then
//   loads a few files instead of about 220 modules (bin/school-export.js prefers the bundle).
// - `build` (`npm run build`, `node bin/prepare.js --build`): the same steps, failing on any error.
// - In an installed package (dist/ shipped, no src/) there is nothing to build.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const forPack = process.argv.includes('--pack');
// `npm run build`: the same build, and any failure fails it (prepare never fails an install)
const strict = forPack || process.argv.includes('--build');
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
  // TypeScript 7's native compiler (the dev dependency @typescript/native; `typescript` itself is
  // TypeScript 6's API, for typescript-eslint). Its package exports no bin/ path: found from its package.json.
  tsc = join(dirname(createRequire(join(root, 'package.json')).resolve('@typescript/native/package.json')), 'bin/tsc');
} catch {
  if (strict) {
    console.error(
      `school-export: cannot ${forPack ? 'pack' : 'build'}: TypeScript (a dev dependency) is needed to build dist/: run \`npm ci\` first`,
    );
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
// Emit only (--noCheck): types are checked by `npm run typecheck` (in `npm test`, over src/, test/
// and bench/). A syntax error still fails it. With TypeScript 5.9 the build took 21 s of CPU on a
// 2-core machine, 11 s with --noCheck (the same files byte for byte); TypeScript 7's takes 3.6 s.
const r = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json'), '--noCheck'], { stdio: 'inherit' });
if (r.status !== 0) {
  console.error(`school-export: building dist/ failed${strict ? '' : '; the command will run from src/ through tsx'}`);
  if (strict) process.exit(1);
} else {
  // the pipeline file's validator as code (src/config/validator-code.ts): no ajv compile at each start
  const { validatorModule } = await import(pathToFileURL(join(root, 'dist/config/validator-code.js')).href);
  writeFileSync(
    join(root, 'dist/config/pipeline-validate.cjs'),
    validatorModule(readFileSync(join(root, 'schema/pipeline.schema.json'), 'utf8')),
  );
  await bundle();
}

/**
 * dist/bundle/main.js: the CLI and the packages it always loads, in one file per command (each
 * command's module is still loaded only when it runs: code splitting keeps the dynamic imports).
 * Measured on a 2-core VM, Node 20: a run of 6 schools x 10 rows took 0.56 s instead of 0.65 s
 * (medians of 7 alternating runs). Packages stay external when they are native (DuckDB), large and loaded only by some
 * commands (the AWS SDK), or loaded by path at run time (undici's internals, ajv, yaml, parquet).
 * Every import.meta.url-relative path in src/ is written so it resolves the same from dist/<dir>/
 * and dist/bundle/ (both one level below dist/). A failed bundle only costs start-up time: the
 * command then runs dist/ as built by tsc (a pack fails instead, so a tarball always has it).
 */
async function bundle() {
  const out = join(root, 'dist/bundle');
  rmSync(out, { recursive: true, force: true });
  try {
    const { build } = await import('esbuild');
    const { metafile } = await build({
      absWorkingDir: root,
      // the worker thread's entry beside main.js: src/encode/pool.ts starts './worker.js' from where it is;
      // the pool as an entry of its own too, so the install test starts worker threads from the bundle
      // exactly as a run does (a small run's pool never starts them: its main thread is not busy enough)
      entryPoints: { main: 'dist/cli/main.js', worker: 'dist/encode/worker.js', pool: 'dist/encode/pool.js' },
      metafile: true,
      outdir: out,
      bundle: true,
      splitting: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      // Node 20 has RegExp's v flag and \p{} escapes, which esbuild's node20 target otherwise lowers to
      // `new RegExp(...)`: string-width's /^\p{RGI_Emoji}$/v was then built as yargs loads, at every start
      // (measured: --version 73 -> 65 ms in-process, medians of 11); a literal is built when first used
      supported: { 'regexp-set-notation': true, 'regexp-unicode-property-escapes': true },
      sourcemap: true,
      external: ['@duckdb/*', '@aws-sdk/*', 'parquetjs-lite', 'undici', 'ajv', 'ajv/*', 'yaml', 'stream-json', 'stream-json/*'],
      logLevel: 'warning',
    });
    // which modules each file holds: tests tell from it what a command loaded
    writeFileSync(join(out, 'meta.json'), JSON.stringify(metafile));
  } catch (e) {
    rmSync(out, { recursive: true, force: true });
    console.error(`school-export: bundling dist/ failed (${e instanceof Error ? e.message : e}); the command runs dist/ unbundled`);
    if (strict) process.exit(1);
  }
}
