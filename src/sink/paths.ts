import { randomBytes } from 'node:crypto';
import { ExportError } from '../errors.ts';

/**
 * Relative paths reach the file system and S3 keys from the pipeline; the ids inside them are
 * validated upstream (src/ids.ts), and this is the last check before any byte is written.
 */

const CONTROL = /[\u0000-\u001f\u007f]/;

function refuse(relPath: string, why: string): never {
  throw new ExportError('E_UNSAFE_ID', `refusing sink path ${JSON.stringify(relPath).slice(0, 120)}: ${why}`);
}

export function assertSafeRelPath(relPath: string): void {
  if (typeof relPath !== 'string' || relPath === '') refuse(String(relPath), 'it is empty');
  checkSegments(relPath, relPath.split('/'));
}

/** A list prefix: '' or a relative path that may end with '/' (a directory) or mid-name. */
export function assertSafePrefix(prefix: string): void {
  if (prefix === '') return;
  const segments = prefix.split('/');
  if (segments[segments.length - 1] === '') segments.pop();
  checkSegments(prefix, segments);
}

function checkSegments(relPath: string, segments: string[]): void {
  if (relPath.startsWith('/')) refuse(relPath, 'absolute paths are not allowed');
  if (relPath.includes('\\')) refuse(relPath, 'backslashes are not allowed');
  if (CONTROL.test(relPath)) refuse(relPath, 'control characters are not allowed');
  for (const segment of segments) {
    if (segment === '') refuse(relPath, 'empty path segments are not allowed');
    if (segment === '.' || segment === '..') refuse(relPath, `"${segment}" segments are not allowed`);
  }
}

/** Temp names start with '.' and end with '.tmp', so listings and loaders can tell them apart. */
export function tempName(baseName: string): string {
  return `.${baseName}.${randomBytes(6).toString('hex')}.tmp`;
}

export function isTempName(baseName: string): boolean {
  return /^\..+\.[0-9a-f]{12}\.tmp$/.test(baseName);
}

/** Content types help people browsing a bucket; the pipeline does not rely on them. */
const CONTENT_TYPES: Record<string, string> = {
  parquet: 'application/vnd.apache.parquet',
  ndjson: 'application/x-ndjson',
  csv: 'text/csv; charset=utf-8',
  json: 'application/json',
};

export function contentTypeFor(relPath: string): string {
  const ext = relPath.slice(relPath.lastIndexOf('.') + 1).toLowerCase();
  return CONTENT_TYPES[ext] ?? 'application/octet-stream';
}
