import { ExportError } from './errors.ts';

/**
 * Ids and region codes from the API become path segments and S3 key parts. They are checked
 * here, once, before they reach a file system path or a key: anything else is refused.
 */
const ID_RE = /^A\d{1,30}$/;
const REGION_RE = /^[a-z0-9][a-z0-9_-]{0,31}$/i;

export function isSafeRegion(code: unknown): code is string {
  return typeof code === 'string' && REGION_RE.test(code);
}

export function isSafeId(id: unknown): id is string {
  return typeof id === 'string' && ID_RE.test(id);
}

export function assertSafeId(id: unknown, what = 'school id'): string {
  if (!isSafeId(id)) {
    throw new ExportError(
      'E_UNSAFE_ID',
      `refusing ${what} ${JSON.stringify(String(id)).slice(0, 60)}: ids must be "A" followed by digits before they become a path segment`,
    );
  }
  return id;
}

export function assertSafeRegion(code: unknown): string {
  if (typeof code !== 'string' || !REGION_RE.test(code)) {
    throw new ExportError(
      'E_UNSAFE_ID',
      `refusing region code ${JSON.stringify(String(code)).slice(0, 60)}: region codes must be letters, digits, "-" or "_"`,
    );
  }
  return code.toLowerCase();
}

/**
 * Ids in natural order (A2 before A10). One collator for the run: `localeCompare` with options
 * sets one up at each call, and sorting a night's tasks by school took 0.1 ms a school that way.
 */
export const compareIds: (a: string, b: string) => number = new Intl.Collator('en', { numeric: true }).compare;
