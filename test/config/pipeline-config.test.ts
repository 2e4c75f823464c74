import { describe, expect, it } from 'vitest';
import { writeFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { resolveRunConfig, readPipelineFile, PACKAGE_ROOT } from '../../src/config/resolve.ts';
import { ConfigError } from '../../src/errors.ts';
import { scratch } from '../helpers/scratch.ts';

const tmp = scratch('cfg-');

const file = (obj: unknown) => {
  const dir = tmp.sub();
  const p = join(dir, 'p.json');
  writeFileSync(p, typeof obj === 'string' ? obj : JSON.stringify(obj));
  return p;
};

describe('pipeline files', () => {
  it('every shipped pipeline validates', () => {
    const dir = join(PACKAGE_ROOT, 'pipelines');
    const names = readdirSync(dir).filter((n) => n.endsWith('.json'));
    expect(names.sort()).toEqual(['full-school.json', 'nightly.json', 'sandbox.json']);
    for (const n of names) expect(() => readPipelineFile(join(dir, n))).not.toThrow();
  });

  it('names an unknown key and lists the known ones', () => {
    const p = file({ api_url: 'https://x.example', formt: 'csv' });
    expect(() => resolveRunConfig(p, {})).toThrow(ConfigError);
    expect(() => resolveRunConfig(p, {})).toThrow(/formt: unknown setting \(known: .*format/);
  });

  it('names a wrong type and what is expected', () => {
    expect(() => resolveRunConfig(file({ api_url: 'https://x.example', concurrency: 'lots' }), {})).toThrow(
      /concurrency: expected an integer from 1 to 256, got "lots"/,
    );
    expect(() => resolveRunConfig(file({ api_url: 'https://x.example', format: 'xml' }), {})).toThrow(
      /format: expected one of ndjson, csv, parquet/,
    );
    expect(() => resolveRunConfig(file({ api_url: 'https://x.example', schools: ['../etc'] }), {})).toThrow(
      /schools\[0\]: expected a school id/,
    );
    expect(() => resolveRunConfig(file({ api_url: 'https://x.example', custom_resources: [{ name: 'students' }] }), {})).toThrow(
      /custom_resources\[0\]\.path: required/,
    );
    expect(() => resolveRunConfig(file({ api_url: 'https://x.example', shard: '4/4' }), {})).toThrow(/shard: index 4 must be below/);
  });

  it('reports invalid JSON with the file name, line and column', () => {
    const p = file('{ "api_url": ');
    expect(() => resolveRunConfig(p, {})).toThrow(new RegExp(`pipeline file ${p.replace(/[/.]/g, '\\$&')}:1:14: not valid JSON`));
    const q = file('{\n  "dest": "./x",\n  "format": csv\n}\n');
    expect(() => resolveRunConfig(q, {})).toThrow(new RegExp(`${q.replace(/[/.]/g, '\\$&')}:3:13: not valid JSON \\(Unexpected token`));
    const r = file('{\n  "dest": "./x",\n}\n');
    expect(() => resolveRunConfig(r, {})).toThrow(new RegExp(`${r.replace(/[/.]/g, '\\$&')}:3:1: not valid JSON`));
  });

  it('flags win over the file, and defaults fill the rest', () => {
    const p = file({
      api_url: 'https://api.example.com/v1.0/',
      format: 'csv',
      concurrency: 2,
      domains: { 'a.example': 'https://a.example' },
    });
    const cfg = resolveRunConfig(p, { concurrency: 9, domains: { 'b.example': 'http://127.0.0.1:1' } });
    expect(cfg.format).toBe('csv');
    expect(cfg.concurrency).toBe(9);
    expect(cfg.perPage).toBe(1000);
    expect(cfg.source).toEqual({
      kind: 'api',
      apiUrl: 'https://api.example.com',
      domains: { 'a.example': 'https://a.example', 'b.example': 'http://127.0.0.1:1' },
      auth: 'bearer',
      tokenFile: undefined,
    });
  });

  it('with neither a file nor --api-url runs the sandbox pipeline; --api-url alone runs with defaults', () => {
    const sb = resolveRunConfig(undefined, {});
    expect(sb.source.kind).toBe('sandbox');
    expect(sb.dest).toBe('./exports');
    const api = resolveRunConfig(undefined, { api_url: 'https://api.example.com' });
    expect(api.source.kind).toBe('api');
    expect(api.format).toBe('parquet');
    expect(api.fullRefresh).toBe(false);
    expect(api.resources).toBeUndefined();
  });

  it('refuses credentials in URLs', () => {
    expect(() => resolveRunConfig(undefined, { api_url: 'https://user:secret@api.example.com' })).toThrow(/not in the URL/);
  });
});
