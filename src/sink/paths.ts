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

/**
 * Temp names start with '.' and end with '.tmp', so listings and loaders can tell them apart:
 * `.<final name>~<owner>~<12 hex>.tmp`. The owner (the run id of the process writing it) lets a
 * later run tell a temp file of a run still writing from one left by a run that died.
 */
export function tempName(baseName: string, owner?: string): string {
  const rand = tempSuffix();
  return owner === undefined ? `.${baseName}.${rand}.tmp` : `.${baseName}~${owner}~${rand}.tmp`;
}

// One random draw per process, then a counter: unique names without a random-bytes call per
// file (0.1 ms a school on a nightly run of thousands of schools).
const SUFFIX_SPACE = 2 ** 48;
const SUFFIX_BASE = randomBytes(6).readUIntBE(0, 6);
let suffixSeq = 0;
function tempSuffix(): string {
  suffixSeq = (suffixSeq + 1) % SUFFIX_SPACE;
  return ((SUFFIX_BASE + suffixSeq) % SUFFIX_SPACE).toString(16).padStart(12, '0');
}

const OWNED_TEMP = /^\..+~([A-Za-z0-9._-]+)~[0-9a-f]{12}\.tmp$/;
const UNOWNED_TEMP = /^\..+\.[0-9a-f]{12}\.tmp$/;

export function isTempName(baseName: string): boolean {
  return OWNED_TEMP.test(baseName) || UNOWNED_TEMP.test(baseName);
}

/** The owner written into a temp name; undefined for a name without one (written before owners existed). */
export function tempOwner(baseName: string): string | undefined {
  return OWNED_TEMP.exec(baseName)?.[1];
}

const OWNER_RE = /^[A-Za-z0-9._-]{1,120}$/;

/** An owner goes into file names: letters, digits, '.', '_' and '-' only (a run id qualifies). */
export function assertSafeOwner(owner: string): void {
  if (!OWNER_RE.test(owner))
    throw new ExportError('E_INTERNAL', `sink owner ${JSON.stringify(owner.slice(0, 130))} is not usable in a file name`);
}

/**
 * The run that writes a data file, read from its name by the output layout's contract
 * (`<run_id>-<seq>.<ext>`, design.md). S3 keeps nothing else about an incomplete multipart upload
 * that we could use: ListMultipartUploads returns only key, upload id and start time.
 */
export function ownerFromDataFileName(baseName: string): string | undefined {
  return /^(\d{8}T\d{6}\.\d{3}Z-[A-Za-z0-9-]+)-\d+\.[A-Za-z0-9.]+$/.exec(baseName)?.[1];
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
