/**
 * The personal-data settings of a run, from the pipeline file's `personal_data` block and
 * `pseudonymise_key_file`, the flags, and SCHOOL_EXPORT_PSEUDONYMISE_KEY_FILE. Everything that
 * can be wrong is found here, before any request, as one line naming the setting (exit 2).
 * The key is read here, once: the compiled policy never does I/O.
 */
import { readFileSync, statSync } from 'node:fs';
import { ConfigError } from '../errors.ts';
import type { TableSchema } from '../table.ts';
import { closest } from './columns.ts';
import { KEEP_ALL, needsKey, type Action, type PersonalDataPolicy } from './policy.ts';
import { MIN_KEY_BYTES, PseudonymiseKey } from './pseudonym.ts';

/** As written in the pipeline file (snake_case); every key optional. */
export interface PersonalDataConfig {
  person_id?: 'keep' | 'pseudonymise';
  direct_identifier?: 'keep' | 'pseudonymise' | 'drop';
  free_text?: 'keep' | 'drop';
  columns?: Record<string, Action>;
}

export const KEY_FILE_ENV = 'SCHOOL_EXPORT_PSEUDONYMISE_KEY_FILE';
const ACTIONS: readonly Action[] = ['keep', 'pseudonymise', 'drop'];

export interface PersonalDataSettings {
  policy: PersonalDataPolicy;
  /** Present when the policy pseudonymises. */
  key?: PseudonymiseKey;
}

/** The file block overlaid by the flags' (flags win, column by column). */
export function mergePersonalData(file?: PersonalDataConfig, flags?: PersonalDataConfig): PersonalDataConfig | undefined {
  if (!file && !flags) return undefined;
  const columns = { ...(file?.columns ?? {}), ...(flags?.columns ?? {}) };
  return { ...file, ...stripUndefined(flags ?? {}), ...(Object.keys(columns).length ? { columns } : {}) };
}

/** `--personal-column TABLE.COLUMN=ACTION` values (repeatable) into the `columns` map. */
export function parsePersonalColumns(values: readonly string[] | undefined): Record<string, Action> | undefined {
  if (!values?.length) return undefined;
  const out: Record<string, Action> = {};
  for (const v of values) {
    const m = /^([^=\s]+)=(keep|pseudonymise|drop)$/.exec(v);
    if (!m) throw new ConfigError(`--personal-column ${v}: expected TABLE.COLUMN=keep|pseudonymise|drop, e.g. achievements.comment=drop`);
    out[m[1]!] = m[2] as Action;
  }
  return out;
}

/**
 * The run's policy and key. `tables` are the run's tables (built-in and custom), so a per-column
 * override naming a table that does not exist, a key column, or a typed column that cannot hold a
 * pseudonym is refused here.
 */
export function resolvePersonalData(
  cfg: PersonalDataConfig | undefined,
  keyFile: string | undefined,
  tables: readonly TableSchema[],
  env: NodeJS.ProcessEnv = process.env,
): PersonalDataSettings {
  const policy = policyFromConfig(cfg, tables);
  if (!needsKey(policy)) return { policy };
  const path = keyFile ?? (env[KEY_FILE_ENV] || undefined);
  if (!path) {
    const what =
      policy.person_id === 'pseudonymise'
        ? 'person_id'
        : policy.direct_identifier === 'pseudonymise'
          ? 'direct_identifier'
          : `columns.${Object.entries(policy.columns).find(([, a]) => a === 'pseudonymise')![0]}`;
    throw new ConfigError(
      `personal_data.${what}: pseudonymise needs a secret key: pass --pseudonymise-key-file PATH (or pseudonymise_key_file, or ${KEY_FILE_ENV}); never the key itself`,
    );
  }
  return { policy, key: readKeyFile(path) };
}

/** The policy the settings describe (defaults: keep), its overrides checked against the tables; no key read. */
export function policyFromConfig(cfg: PersonalDataConfig | undefined, tables: readonly TableSchema[]): PersonalDataPolicy {
  const policy: PersonalDataPolicy = {
    person_id: cfg?.person_id ?? KEEP_ALL.person_id,
    direct_identifier: cfg?.direct_identifier ?? KEEP_ALL.direct_identifier,
    free_text: cfg?.free_text ?? KEEP_ALL.free_text,
    columns: { ...(cfg?.columns ?? {}) },
  };
  checkColumns(policy.columns, tables);
  return policy;
}

function checkColumns(columns: Record<string, Action>, tables: readonly TableSchema[]): void {
  const byName = new Map(tables.map((t) => [t.name, t]));
  for (const [key, action] of Object.entries(columns)) {
    const at = `personal_data.columns.${key}`;
    const dot = key.indexOf('.');
    if (dot <= 0 || dot === key.length - 1) throw new ConfigError(`${at}: write the column as TABLE.COLUMN, e.g. achievements.comment`);
    if (!ACTIONS.includes(action)) throw new ConfigError(`${at}: expected one of ${ACTIONS.join(', ')}`);
    const table = byName.get(key.slice(0, dot));
    if (!table) {
      const near = closest(key.slice(0, dot), [...byName.keys()]);
      const hint = near.length ? `did you mean ${near.map((t) => `${t}.${key.slice(dot + 1)}`).join(' or ')}? ` : '';
      throw new ConfigError(
        `${at}: no table ${JSON.stringify(key.slice(0, dot))} in this run (${hint}known: ${[...byName.keys()].join(', ')})`,
      );
    }
    const column = key.slice(dot + 1);
    if (column.startsWith('_') && table.columns.some((c) => c.name === column)) {
      throw new ConfigError(`${at}: ${column} is a metadata column the export itself writes; it holds nothing to minimise`);
    }
    if (action === 'drop' && table.key.includes(column)) {
      throw new ConfigError(
        `${at}: ${column} is part of the key of ${table.name}; dropping it would merge every row into one (use pseudonymise)`,
      );
    }
    const col = table.columns.find((c) => c.name === column);
    if (action === 'pseudonymise' && col && col.type !== 'string' && col.type !== 'json') {
      throw new ConfigError(`${at}: ${key} holds ${col.type} values and cannot hold a pseudonym; use drop`);
    }
  }
}

/** The key file's bytes, without trailing white space (an editor's final newline must not change the key). */
export function readKeyFile(path: string): PseudonymiseKey {
  let bytes: Buffer;
  try {
    if (!statSync(path).isFile()) throw new Error('not a file');
    bytes = readFileSync(path);
  } catch (e) {
    throw new ConfigError(`--pseudonymise-key-file ${path}: cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  let end = bytes.length;
  while (end > 0 && (bytes[end - 1] === 0x0a || bytes[end - 1] === 0x0d || bytes[end - 1] === 0x20 || bytes[end - 1] === 0x09)) end--;
  if (end < MIN_KEY_BYTES) {
    throw new ConfigError(
      `--pseudonymise-key-file ${path}: holds ${end} bytes; a key needs at least ${MIN_KEY_BYTES} random bytes (e.g. openssl rand -base64 48 > ${path})`,
    );
  }
  return new PseudonymiseKey(bytes.subarray(0, end));
}

function stripUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
