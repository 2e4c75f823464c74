/**
 * The pipeline file's validator as JavaScript source (ajv "standalone" code), generated when
 * dist/ is built (bin/prepare.js) so a run loads a ready function instead of compiling the JSON
 * Schema with ajv at every start (tens of milliseconds, a fifth of a small nightly run's fixed
 * cost). The module records the SHA-256 of the schema text it was made from: schema.ts uses it
 * only while the schema file is unchanged, and compiles at run time otherwise (and from src/).
 */
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';

/** Ajv options the validator is compiled with, generated or not (errors depend on them). */
export const AJV_OPTIONS = { verbose: true, allErrors: false } as const;

export function schemaDigest(schemaText: string): string {
  return createHash('sha256').update(schemaText).digest('hex');
}

/** CommonJS source: `module.exports` is the validate function, with `schemaSha256` on it. */
export function validatorModule(schemaText: string): string {
  const require = createRequire(import.meta.url);
  const { Ajv } = require('ajv') as typeof import('ajv');
  const standalone = (require('ajv/dist/standalone') as { default: (ajv: unknown, fn: unknown) => string }).default;
  const ajv = new Ajv({ ...AJV_OPTIONS, code: { source: true } });
  ajv.addKeyword('x-expected');
  const code = standalone(ajv, ajv.compile(JSON.parse(schemaText) as object));
  return `${code}\nmodule.exports.schemaSha256 = ${JSON.stringify(schemaDigest(schemaText))};\n`;
}
