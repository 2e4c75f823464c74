import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { extname, isAbsolute, resolve } from 'node:path';
import { ConfigError } from '../errors.ts';
import { jsonErrorLocation } from './json-position.ts';
import { keyPath, PACKAGE_ROOT, validatePipeline, type PipelineConfig } from './schema.ts';

/**
 * Reads a pipeline file: JSON (`.json`) or YAML (`.yaml`/`.yml`), then `${ENV_VAR}` in string
 * values is replaced from the environment (`$${` writes a literal `${`), then the result is
 * validated against the shipped schema. Every problem names the file and the key.
 */
export function readPipelineFile(path: string, env: NodeJS.ProcessEnv = process.env): PipelineConfig {
  const where = `pipeline file ${path}`;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new ConfigError(`${where}: cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})${shippedHint(path)}`);
  }
  const raw = parseText(text, path, where);
  return validatePipeline(interpolate(raw, env, where, []), where);
}

/**
 * The README's examples name pipelines/... and samples/... of a checkout; a user who installed the
 * package from npm has them under node_modules/school-export/: say where, and how to start one.
 */
function shippedHint(path: string): string {
  if (isAbsolute(path)) return '';
  const shipped = resolve(PACKAGE_ROOT, path);
  if (shipped === resolve(path) || !existsSync(shipped)) return '';
  return `; the package ships ${path} at ${shipped}: copy it here, or write a starter with \`school-export init\``;
}

export function isYamlPath(path: string): boolean {
  return ['.yaml', '.yml'].includes(extname(path).toLowerCase());
}

function parseText(text: string, path: string, where: string): unknown {
  if (isYamlPath(path)) {
    try {
      // YAML 1.2 core schema: `no` and `off` stay strings, duplicate keys are errors
      // loaded only for YAML files
      const { parse: parseYaml } = createRequire(import.meta.url)('yaml') as typeof import('yaml');
      return parseYaml(text, { prettyErrors: true, uniqueKeys: true }) ?? {};
    } catch (e) {
      // with prettyErrors the message ends " at line L, column C:" and a code frame: one line is kept
      const pos = (e as { linePos?: { line: number; col: number }[] }).linePos?.[0];
      const what = (e as Error).message.split('\n')[0]!.replace(/ at line \d+, column \d+:$/, '');
      throw new ConfigError(`${where}${pos ? `:${pos.line}:${pos.col}` : ''}: not valid YAML (${what})`);
    }
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    const pos = jsonErrorLocation(text);
    const what = (e as Error).message.replace(/\s+/g, ' ').replace(/ \(line \d+ column \d+\)$/, '');
    throw new ConfigError(`${where}${pos ? `:${pos.line}:${pos.column}` : ''}: not valid JSON (${what})`);
  }
}

const VAR = /\$(\$?)\{([^}]*)\}/g;
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `${NAME}` in every string value (not in keys); an unset or empty variable is an error naming the key. */
export function interpolate(v: unknown, env: NodeJS.ProcessEnv, where: string, path: (string | number)[]): unknown {
  if (typeof v === 'string') {
    return v.replace(VAR, (_m, escaped: string, name: string) => {
      if (escaped) return '${' + name + '}';
      const at = `${where}: ${keyPath(path)}`;
      if (!NAME.test(name)) throw new ConfigError(`${at}: \${${name}} is not a variable name (letters, digits and _)`);
      // the token is never a setting: it would end up in a URL or a log line
      if (name === 'SCHOOL_API_TOKEN')
        throw new ConfigError(
          `${at}: \${SCHOOL_API_TOKEN} is not allowed: the token is read from SCHOOL_API_TOKEN itself, never from a setting`,
        );
      const value = env[name];
      if (value === undefined || value === '') throw new ConfigError(`${at}: \${${name}} is not set in the environment`);
      return value;
    });
  }
  if (Array.isArray(v)) return v.map((x, i) => interpolate(x, env, where, [...path, i]));
  if (v && typeof v === 'object') {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, interpolate(x, env, where, [...path, k])]));
  }
  return v;
}
