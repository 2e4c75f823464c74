import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { INSTALL_SCRIPT } from './install-steps.ts';

/**
 * Docker cannot build here, so the image is checked by what can be: its install steps are exactly
 * the production install the tests run (both run bin/install-tarball.sh, and nothing else
 * installs anything into the final image), on a Node 24 slim base, as a non-root user, with
 * school-export as the entrypoint (run by node with a flag of its own); and the CronJob sample
 * runs that image as an Indexed Job.
 */
const ROOT = resolve(import.meta.dirname, '../..');
const read = (p: string) => readFileSync(join(ROOT, p), 'utf8');

interface Instruction {
  op: string;
  args: string;
}

/** Dockerfile instructions per stage (continuation lines joined, comments dropped). */
function stages(text: string): { from: string; name?: string; steps: Instruction[] }[] {
  const joined = text.replace(/\\\n/g, ' ');
  const out: { from: string; name?: string; steps: Instruction[] }[] = [];
  for (const line of joined.split('\n')) {
    const m = /^\s*([A-Z]+)\s+(.*)$/.exec(line);
    if (!m || line.trim().startsWith('#')) continue;
    const [, op, args] = m as unknown as [string, string, string];
    if (op === 'FROM') {
      const [, image, name] = /^(\S+)(?:\s+AS\s+(\S+))?/i.exec(args)!;
      out.push({ from: image!, ...(name ? { name } : {}), steps: [] });
    } else out.at(-1)!.steps.push({ op, args: args.replace(/\s+/g, ' ').trim() });
  }
  return out;
}

describe('the Dockerfile', () => {
  const all = stages(read('Dockerfile'));
  const final = all.at(-1)!;
  const runs = final.steps.filter((s) => s.op === 'RUN').map((s) => s.args);
  /** The final stage's ENTRYPOINT, in its exec form (a JSON array). */
  const entrypoint = (): string[] => JSON.parse(final.steps.filter((s) => s.op === 'ENTRYPOINT').at(-1)!.args) as string[];

  it('builds from a Node 24 slim base; the final stage installs through the production-install script and nothing else', () => {
    for (const s of all) expect(s.from).toMatch(/^node:24(\.\d+)*(-\w+)?-slim$/);
    expect(runs.join(' ')).toContain(`sh /tmp/install-tarball.sh /tmp/school-export.tgz /opt/school-export`);
    expect(final.steps).toContainEqual({ op: 'COPY', args: `${INSTALL_SCRIPT} /tmp/install-tarball.sh` });
    // no package manager at work in the final image other than the script's npm ci --omit=dev
    expect(runs.join(' ')).not.toMatch(/\bnpm (ci|install|i)\b|\bapt-get\b|\bapk\b|\byarn\b|\bpnpm\b/);
    // the tarball is the one `npm pack` made in the first stage
    expect(final.steps).toContainEqual({ op: 'COPY', args: `--from=${all[0]!.name} /tmp/school-export.tgz /tmp/school-export.tgz` });
    expect(
      all[0]!.steps
        .filter((s) => s.op === 'RUN')
        .map((s) => s.args)
        .join(' '),
    ).toMatch(/npm ci .*&& npm pack/);
  });

  it('runs as a non-root user with school-export as its entrypoint; no build tools, no npm left', () => {
    const user = final.steps.filter((s) => s.op === 'USER').at(-1)?.args;
    expect(user).toBeDefined();
    expect(user).not.toMatch(/^(root|0)(:|$)/);
    expect(entrypoint()).toEqual(['node', '--no-concurrent-recompilation', '/opt/school-export/bin/school-export.js']);
    expect(runs.join(' ')).toContain('ln -s /opt/school-export/bin/school-export.js /usr/local/bin/school-export');
    expect(runs.join(' ')).toMatch(/rm -rf [^&]*\/usr\/local\/bin\/npm /);
    expect(read('Dockerfile')).not.toMatch(/build-essential|gcc|g\+\+|python3|make /);
  });

  it("the entrypoint's node flag is one this Node accepts on its command line (CI runs Node 20 and 24)", () => {
    const r = spawnSync(process.execPath, [...entrypoint().slice(1, -1), join(ROOT, 'bin/school-export.js'), '--version'], {
      encoding: 'utf8',
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout.trim()).toBe((JSON.parse(read('package.json')) as { version: string }).version);
  });

  it('the production-install test runs the same script, and the script is the production install', () => {
    const script = read(INSTALL_SCRIPT);
    expect(script).toMatch(/^tar xzf "\$tarball" -C "\$dir" --strip-components=1$/m);
    expect(script).toMatch(/^npm ci --omit=dev --no-audit --no-fund "\$@"$/m);
    const test = read('test/install/production-install.test.ts');
    expect(test).toContain("import { INSTALL_SCRIPT } from './install-steps.ts';");
    expect(test).toMatch(/sh\('sh', \[join\(ROOT, INSTALL_SCRIPT\), tgz, app, '--offline'\]/);
  });

  it(".dockerignore keeps the checkout's node_modules and dist out of the build context (the image builds its own)", () => {
    const ignored = read('.dockerignore').split('\n');
    for (const p of ['node_modules', 'dist', '.git']) expect(ignored).toContain(p);
  });
});

describe('the CronJob sample', () => {
  const job = parse(read('samples/deploy/cronjob.yaml')) as {
    kind: string;
    spec: {
      concurrencyPolicy: string;
      jobTemplate: {
        spec: {
          completionMode: string;
          completions: number;
          parallelism: number;
          template: {
            spec: {
              securityContext?: { runAsNonRoot?: boolean };
              containers: { image: string; args: string[]; env: { name: string; value?: string }[] }[];
            };
          };
        };
      };
    };
  };

  it('runs the image as an Indexed Job of N shards, never two nights at once', () => {
    expect(job.kind).toBe('CronJob');
    expect(job.spec.concurrencyPolicy).toBe('Forbid');
    const spec = job.spec.jobTemplate.spec;
    expect(spec.completionMode).toBe('Indexed');
    expect(spec.parallelism).toBe(spec.completions);
    const c = spec.template.spec.containers[0]!;
    expect(c.image).toMatch(/school-export/);
    expect(c.image).not.toMatch(/^node:/);
    expect(c.args[0]).toBe('run');
    expect(spec.template.spec.securityContext?.runAsNonRoot).toBe(true);
    const names = c.env.map((e) => e.name);
    // the index is declared before the shard refers to it ($(VAR) expands only earlier variables)
    expect(names.indexOf('JOB_COMPLETION_INDEX')).toBeLessThan(names.indexOf('SCHOOL_EXPORT_SHARD'));
    expect(c.env.find((e) => e.name === 'SCHOOL_EXPORT_SHARD')?.value).toBe(`$(JOB_COMPLETION_INDEX)/${spec.completions}`);
    expect(names).not.toContain('AWS_SECRET_ACCESS_KEY');
  });
});
