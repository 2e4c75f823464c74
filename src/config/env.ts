import { ConfigError } from '../errors.ts';
import { parseDomains } from './credentials.ts';
import { parsePropertyScopePairs } from '../resources/scopes.ts';
import { describeValue, findProblem, keyPath, pipelineSchema, type PipelineConfig, type PipelineKey, type SchemaNode } from './schema.ts';

/**
 * Pipeline settings from the environment: SCHOOL_EXPORT_<KEY> for every key of the pipeline file
 * (SCHOOL_EXPORT_API_URL, SCHOOL_EXPORT_DEST, SCHOOL_EXPORT_FORMAT, ...), where operators keep
 * configuration in containers and CI. Text is converted by the key's type in the schema: integers
 * and booleans (true/false, 1/0, yes/no), lists comma-separated, `domains` as NAME=URL,NAME=URL,
 * and the nested settings (sandbox, custom_resources, resource_options) as JSON.
 */
export const ENV_PREFIX = 'SCHOOL_EXPORT_';

/** Keys that describe the file itself, not a setting. */
const NOT_SETTINGS = new Set(['$schema', 'description']);

export function envName(key: string): string {
  return ENV_PREFIX + key.toUpperCase();
}

/** Every key settable from the environment, in schema order. */
export function envKeys(): PipelineKey[] {
  return Object.keys(pipelineSchema().properties).filter((k) => !NOT_SETTINGS.has(k)) as PipelineKey[];
}

/** The raw text of one setting's variable, or undefined when unset or empty. */
export function envSetting(env: NodeJS.ProcessEnv, key: PipelineKey): string | undefined {
  const v = env[envName(key)];
  return v === undefined || v === '' ? undefined : v;
}

function convert(key: string, text: string, node: SchemaNode): unknown {
  const t = text.trim();
  if (key === 'domains') {
    return parseDomains(t.split(',').filter((s) => s.trim()));
  }
  // JSON like the other objects, or TABLE.COLUMN=PERMISSION,... like --property-scopes
  if (key === 'property_scopes' && !t.startsWith('{')) return parsePropertyScopePairs([t], envName(key));
  switch (node.type) {
    case 'integer':
      return /^-?\d+$/.test(t) ? Number(t) : t;
    case 'boolean':
      if (/^(true|1|yes|on)$/i.test(t)) return true;
      if (/^(false|0|no|off)$/i.test(t)) return false;
      return t;
    case 'array':
      if (node.items?.type === 'object') return parseJson(key, t);
      return t
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
    case 'object':
      return parseJson(key, t);
    default:
      return t;
  }
}

function parseJson(key: string, t: string): unknown {
  try {
    return JSON.parse(t);
  } catch (e) {
    throw new ConfigError(`${envName(key)}: expected JSON (${(e as Error).message})`);
  }
}

/** Edit distance, for "did you mean": a misspelt variable would otherwise be ignored without a word. */
function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length]!;
}

/**
 * The settings given in the environment, validated. Other SCHOOL_EXPORT_ variables are left alone
 * (tools and tests may use the prefix), except near-misses of a setting's name, which are errors.
 */
export function pipelineFromEnv(env: NodeJS.ProcessEnv = process.env): PipelineConfig {
  const props = pipelineSchema().properties;
  const keys = envKeys();
  const known = keys.map(envName);
  for (const name of Object.keys(env)) {
    if (!name.startsWith(ENV_PREFIX) || known.includes(name)) continue;
    const near = known.find((k) => distance(k, name) <= 2);
    if (near) throw new ConfigError(`${name}: unknown setting: did you mean ${near}?`);
  }
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    const text = envSetting(env, key);
    if (text !== undefined) out[key] = convert(key, text, props[key]!);
  }
  const p = findProblem(out);
  if (p) {
    const [key, ...rest] = p.path as [string, ...(string | number)[]];
    const inner = rest.length ? ` ${keyPath(rest)}` : '';
    const given = rest.length ? (p.value === undefined ? '' : `, got ${describeValue(p.value)}`) : '';
    throw new ConfigError(`${envName(key)}=${JSON.stringify(env[envName(key)] ?? '')}:${inner} ${p.message}${given}`.replace(/=""/, ''));
  }
  return out as PipelineConfig;
}
