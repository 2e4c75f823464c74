import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TaskSetup } from '../../src/encode/protocol.ts';
import { resourceByName } from '../../src/resources/index.ts';
import { CTX, FIXTURES } from '../flatten/fixtures.ts';
import { INSTALL_SCRIPT } from './install-steps.ts';

/**
 * What a server does: `npm pack` on a build machine, then the tarball unpacked into an empty
 * directory and installed with `npm ci --omit=dev` (the tarball carries the lockfile as
 * npm-shrinkwrap.json) by bin/install-tarball.sh, the script the Dockerfile runs, then the command run from there: `--version`, `--help`, `run` against the
 * built-in sandbox, `status` and `warehouse load` into DuckDB. Offline: npm answers from its cache,
 * which the `npm ci` that installed this checkout filled; no test here talks to a registry.
 *
 * The pack runs in a copy of the sources (with this checkout's node_modules linked in for the
 * compiler), so it never rebuilds the dist/ other tests may be running at the same moment.
 */
const ROOT = resolve(import.meta.dirname, '../..');
const TRACE = join(import.meta.dirname, 'fixtures/trace-imports.mjs');
const POOL_PROBE = join(import.meta.dirname, 'fixtures/pool-probe.mjs');
const PKG = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  version: string;
  files: string[];
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';

let work: string;
let app: string;
let tgz: string;

function sh(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): SpawnSyncReturns<string> {
  const r = spawnSync(cmd, args, {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false', ...env },
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.error) throw r.error;
  return r;
}

/** ok(), saying what to do when npm's cache lacks a package an offline install needs. */
function offlineOk(r: SpawnSyncReturns<string>, what: string): SpawnSyncReturns<string> {
  if (r.status !== 0 && /ENOTCACHED/.test(r.stderr)) {
    throw new Error(
      `npm's cache lacks a runtime dependency (ENOTCACHED), so the offline install cannot run: run \`npm ci\` in this checkout first (it fills the cache).\n${r.stderr.slice(-2000)}`,
    );
  }
  return ok(r, what);
}

function ok(r: SpawnSyncReturns<string>, what: string): SpawnSyncReturns<string> {
  if (r.status !== 0)
    throw new Error(`${what} exited ${r.status}\n--- stdout\n${r.stdout.slice(-4000)}\n--- stderr\n${r.stderr.slice(-4000)}`);
  return r;
}

/**
 * The lockfile `npm install school-export-<version>.tgz` writes in a project with no other
 * dependency: the package at node_modules/school-export, its runtime dependencies hoisted beside it
 * exactly as its npm-shrinkwrap.json lays them out. Written here because an offline `npm install`
 * would ask the registry for each dependency's metadata, which npm's cache does not hold (npm ci
 * fetched tarballs only); `npm ci` from this lockfile installs offline, the same tree.
 */
function hostLockfile(hostPkg: { name: string; version: string; dependencies: Record<string, string> }, tarball: string): object {
  const wrap = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { dev?: boolean; [k: string]: unknown }>;
  };
  const { devDependencies: _dev, ...self } = wrap.packages['']!;
  const packages: Record<string, unknown> = {
    '': hostPkg,
    'node_modules/school-export': { ...self, resolved: `file:${tarball}` },
  };
  for (const [path, entry] of Object.entries(wrap.packages)) if (path && !entry.dev) packages[path] = entry;
  return { name: hostPkg.name, version: hostPkg.version, lockfileVersion: 3, requires: true, packages };
}

/** The installed command, run with plain Node as the bin shim would; optionally tracing the modules it loads. */
function cli(args: string[], o: { trace?: string; cwd?: string } = {}): SpawnSyncReturns<string> {
  const pre = o.trace ? ['--import', TRACE] : [];
  return sh(process.execPath, [...pre, join(app, 'bin/school-export.js'), ...args], o.cwd ?? app, {
    TRACE_IMPORTS_FILE: o.trace ?? '',
    SCHOOL_API_TOKEN: '',
  });
}

type BundleMeta = { outputs: Record<string, { inputs: Record<string, unknown> }> };
const bundleMeta = (): BundleMeta => JSON.parse(readFileSync(join(app, 'dist/bundle/meta.json'), 'utf8')) as BundleMeta;

/** The module URLs a traced command loaded, each file of the bundle followed by the modules it holds (as /dist/... paths). */
function loadedModules(trace: string): string {
  const meta = bundleMeta();
  const urls = readFileSync(trace, 'utf8').split('\n');
  const inside = urls.flatMap((u) => {
    const file = /\/(dist\/bundle\/[^/]+\.js)$/.exec(u)?.[1];
    return file ? Object.keys(meta.outputs[file]?.inputs ?? {}).map((p) => `/${p}`) : [];
  });
  return [...urls, ...inside].join('\n');
}

describe('production install from the packed tarball (npm ci --omit=dev, offline)', () => {
  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), 'se-install-'));
    const src = join(work, 'src-copy');
    mkdirSync(src);
    for (const f of ['package.json', 'package-lock.json', 'README.md', 'tsconfig.json', 'tsconfig.build.json', ...PKG.files]) {
      const name = f.replace(/\/$/, '');
      if (name.startsWith('!') || name === 'npm-shrinkwrap.json' || name.startsWith('dist')) continue;
      if (existsSync(join(ROOT, name))) cpSync(join(ROOT, name), join(src, name), { recursive: true });
    }
    cpSync(join(ROOT, 'src'), join(src, 'src'), { recursive: true });
    symlinkSync(join(ROOT, 'node_modules'), join(src, 'node_modules'), 'dir');

    const out = join(work, 'out');
    mkdirSync(out);
    ok(sh(NPM, ['pack', '--pack-destination', out], src), 'npm pack');
    const tarball = readdirSync(out).find((f) => f.endsWith('.tgz'));
    if (!tarball) throw new Error(`npm pack wrote no tarball in ${out}`);
    expect(existsSync(join(src, 'npm-shrinkwrap.json')), 'postpack removes the shrinkwrap copy').toBe(false);

    tgz = join(out, tarball);
    // the steps the Dockerfile runs too (test/install/dockerfile.test.ts checks they are the same)
    app = join(work, 'server', 'school-export');
    offlineOk(sh('sh', [join(ROOT, INSTALL_SCRIPT), tgz, app, '--offline'], work), `${INSTALL_SCRIPT} --offline`);
  }, 300_000);

  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('ships dist/, the schema, the lockfile and no sources; installs runtime dependencies only', () => {
    for (const p of [
      'dist/cli/main.js',
      'dist/bundle/main.js',
      'schema/pipeline.schema.json',
      'pipelines/sandbox.json',
      'npm-shrinkwrap.json',
      'bin/school-export.js',
    ]) {
      expect(existsSync(join(app, p)), p).toBe(true);
    }
    expect(existsSync(join(app, 'src')), 'no TypeScript sources').toBe(false);
    for (const dep of Object.keys(PKG.dependencies)) expect(existsSync(join(app, 'node_modules', dep)), dep).toBe(true);
    for (const dev of Object.keys(PKG.devDependencies)) expect(existsSync(join(app, 'node_modules', dev)), dev).toBe(false);
  });

  it('--version and --help load no heavy module (DuckDB, the AWS SDK, Parquet, the sandbox)', () => {
    const heavy = ['@duckdb', '@aws-sdk', '/dist/sandbox/', '/dist/warehouse/'];
    // `run` declares its --format choices from the format registry, which loads the writers
    const cases: [string[], string[]][] = [
      [['--version'], [...heavy, 'parquetjs-lite', '/dist/pipeline/', 'ajv', 'yaml']],
      [['--help'], [...heavy, 'parquetjs-lite', '/dist/pipeline/', 'ajv', 'yaml']],
      [['run', '--help'], heavy],
      [
        ['status', '--help'],
        [...heavy, 'parquetjs-lite'],
      ],
      [
        ['schools', '--help'],
        [...heavy, 'parquetjs-lite'],
      ],
    ];
    for (const [args, notLoaded] of cases) {
      const trace = join(work, `trace-${args.join('-')}.txt`);
      const started = process.hrtime.bigint();
      const r = ok(cli(args, { trace }), args.join(' '));
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      if (args[0] === '--version') expect(r.stdout.trim()).toBe(PKG.version);
      // the command runs from the bundle (bin/prepare.js), not from the ~220 modules of dist/
      expect(readFileSync(trace, 'utf8')).toContain('/dist/bundle/main.js');
      expect(readFileSync(trace, 'utf8')).not.toContain('/dist/cli/');
      const loaded = loadedModules(trace);
      for (const m of notLoaded) expect(loaded.includes(m), `${args.join(' ')} loaded ${m}`).toBe(false);
      // measured for the report, not asserted: wall time on a shared 2-core machine is not a test
      console.log(`production install: school-export ${args.join(' ')} took ${ms.toFixed(0)} ms`);
    }
  });

  it('the bundle starts its own worker thread entry, beside the pool as in dist/encode/', () => {
    const outputs = Object.entries(bundleMeta().outputs);
    const [file] = outputs.find(([, o]) => 'dist/encode/pool.js' in o.inputs) ?? [];
    expect(file, 'a bundle file holds the pool').toBeDefined();
    expect(readFileSync(join(app, file!), 'utf8')).toContain('new URL("./worker.js", here)');
    const worker = fileURLToPath(new URL('./worker.js', pathToFileURL(join(app, file!))));
    expect(outputs.find(([f]) => join(app, f) === worker)?.[1].inputs).toHaveProperty(['dist/encode/worker.js']);
  });

  it('worker threads start from the bundle and encode what the main thread does (NDJSON, Parquet)', () => {
    // the pool the run chunk holds, as the bundle's pool.js entry exports it (bin/prepare.js)
    const poolUrl = pathToFileURL(join(app, 'dist/bundle/pool.js')).href;
    const pages = [0, 1, 2].map((p) => (FIXTURES.achievements as Record<string, unknown>[]).map((r, i) => ({ ...r, id: `A${p}${i}` })));
    for (const format of ['ndjson', 'parquet'] as const) {
      const input = join(work, `pool-${format}.json`);
      const setup: TaskSetup = { spec: resourceByName('achievements')!, format, formatOptions: {}, ctx: CTX, keyField: 'id' };
      writeFileSync(input, JSON.stringify({ setup, pages }));
      const trace = join(work, `trace-pool-${format}.txt`);
      const r = ok(
        sh(process.execPath, ['--import', TRACE, POOL_PROBE, poolUrl, input], app, { TRACE_IMPORTS_FILE: trace }),
        `pool probe (${format})`,
      );
      const { inThread, pooled } = JSON.parse(r.stdout) as Record<'inThread' | 'pooled', { started: number; results: unknown[] }>;
      expect(inThread.started).toBe(0);
      expect(pooled.started, 'one worker thread started').toBe(1);
      expect(inThread.results).toHaveLength(pages.length);
      // every page went to the thread (the probe's main thread reads as always busy), and came back the same
      expect(pooled).toEqual({ ...inThread, started: 1 });
      // the pool ran from the bundle, not from the modules of dist/
      expect(readFileSync(trace, 'utf8')).toContain('/dist/bundle/pool.js');
      expect(readFileSync(trace, 'utf8')).not.toContain('/dist/encode/');
    }
  });

  it("installed into another project: --version prints this package's version, not the host's; init then run works there", () => {
    const host = join(work, 'host-project');
    mkdirSync(host);
    const hostPkg = { name: 'host-project', version: '7.7.7', private: true, dependencies: { 'school-export': `file:${tgz}` } };
    writeFileSync(join(host, 'package.json'), JSON.stringify(hostPkg));
    writeFileSync(join(host, 'package-lock.json'), JSON.stringify(hostLockfile(hostPkg, tgz)));
    offlineOk(sh(NPM, ['ci', '--omit=dev', '--offline', '--no-audit', '--no-fund'], host), 'npm ci in the host project');
    const bin = join(host, 'node_modules/.bin/school-export');
    expect(existsSync(bin), 'npm links the bin').toBe(true);
    const version = () => ok(sh(bin, ['--version'], host, { SCHOOL_API_TOKEN: '' }), 'school-export --version').stdout.trim();
    expect(version()).toBe(PKG.version);
    // the host's own version changing changes nothing
    writeFileSync(join(host, 'package.json'), JSON.stringify({ ...hostPkg, version: '8.8.8' }));
    expect(version()).toBe(PKG.version);
    // and from a directory of the host's below its package.json
    mkdirSync(join(host, 'jobs'));
    expect(ok(sh(bin, ['--version'], join(host, 'jobs')), 'school-export --version in a subfolder').stdout.trim()).toBe(PKG.version);

    // the README's examples name pipelines/...: the host has no such folder, and is told where the package's are
    const missing = sh(bin, ['run', 'pipelines/nightly.json'], host, { SCHOOL_API_TOKEN: '' });
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain(
      `the package ships pipelines/nightly.json at ${join(host, 'node_modules/school-export/pipelines/nightly.json')}`,
    );
    // init writes a starter that names the installed schema and runs against the sandbox as written
    ok(sh(bin, ['init'], host), 'school-export init');
    const starter = readFileSync(join(host, 'pipeline.yaml'), 'utf8');
    expect(starter.split('\n')[0]).toBe('# yaml-language-server: $schema=node_modules/school-export/schema/pipeline.schema.json');
    const run = ok(sh(bin, ['run', 'pipeline.yaml', '--progress', 'none', '--json'], host, { SCHOOL_API_TOKEN: '' }), 'run pipeline.yaml');
    expect(JSON.parse(run.stdout.trim().split('\n').pop()!)).toMatchObject({ status: 'ok' });
    expect(existsSync(join(host, 'exports/_manifests'))).toBe(true);
  });

  it('runs the embedded sandbox export, then status and warehouse load into DuckDB', () => {
    const dest = join(work, 'exports');
    const trace = join(work, 'trace-run.txt');
    const run = ok(cli(['run', '--dest', dest, '--progress', 'none', '--json'], { trace }), 'run');
    const summary = JSON.parse(run.stdout.trim().split('\n').pop()!);
    expect(summary.status).toBe('ok');
    // the pipeline's validator generated at build time is found from the bundle: ajv itself is not compiled in
    expect(loadedModules(trace)).not.toContain('/ajv/dist/ajv.js');
    expect(readdirSync(join(dest, '_manifests')).some((f) => f.endsWith('.json'))).toBe(true);

    const status = ok(cli(['status', '--dest', dest, '--json']), 'status');
    const runs = status.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .filter((l) => l.type === 'run');
    expect(runs).toEqual([expect.objectContaining({ run_id: summary.runId, status: 'ok' })]);

    const db = join(work, 'school.duckdb');
    const load = ok(cli(['warehouse', 'load', '--dest', dest, '--into', `duckdb:${db}`]), 'warehouse load');
    expect(load.stdout + load.stderr).toMatch(/achievements/);
    expect(existsSync(db)).toBe(true);
  });
});
