/**
 * Errors with stable codes and structured context (undici's errors.js: a class per kind, fields
 * instead of context buried in message text). Messages name what to fix; they never carry the
 * access token (the client redacts before any message is built from a URL or a server's body).
 * The README's "Error codes" table says what each code means and what to do.
 */
export const ERROR_CODES = {
  E_CONFIG: 'a pipeline file, flag or environment setting is wrong (exit 2)',
  E_USAGE: 'the command line is wrong (exit 2)',
  E_AUTH: 'the access token was rejected (401) (exit 2)',
  E_FORBIDDEN: 'the token lacks the scope for an endpoint at a school (403)',
  E_NOT_FOUND: 'no such school or endpoint at that domain (404)',
  E_BAD_REQUEST: 'the service refused a request as malformed (400)',
  E_VALIDATION: 'the service rejected data it was sent (422)',
  E_HTTP_RETRIES: 'a retriable failure (429, 5xx, 423, network) outlasted the retry budget',
  E_SCHOOL_INACTIVE: 'the school answered 423 (inactive) after the retry budget; its tasks were skipped',
  E_PROTOCOL: 'the service answered something the contract does not allow (bad JSON, repeated cursor)',
  E_DOMAIN_NOT_ALLOWED: "a school's region domain is not configured, so the token is never sent there",
  E_UNSAFE_ID: 'an id or region code from the API is not safe as a path segment or key',
  E_SINK: 'writing to or reading from the destination failed',
  E_STATE: 'a state, manifest or id-list file is unreadable, or state could not be advanced',
  E_DATA: 'a value does not fit the type its column declares',
  E_LOCKED: 'another run holds the destination (or shard) lease (exit 2)',
  E_PURGED: "the school's access was revoked and its data purged while the task ran; nothing of it was kept",
  E_POLICY: 'a loader requirement was not met (warehouse load --require-pseudonymised): nothing was loaded',
  E_ABORTED: 'the run was interrupted (SIGINT / SIGTERM) before the task finished',
  E_POLICY_CHANGE: "the run's personal-data policy is weaker than the destination's, or uses another key (exit 2)",
  E_FORMAT_CHANGE: "the run's format is not the destination's (exit 2)",
  E_INTERNAL: 'a bug in school-export: please report it with the command line',
  E_LOCK_UNSAFE: "the destination's store ignores conditional writes, so the lease cannot keep runs apart (exit 2)",
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

/** Where an error happened, as fields a log collector or a test can read without parsing text. */
export interface ErrorContext {
  school?: string;
  resource?: string;
  endpoint?: string;
  status?: number;
  retryable?: boolean;
}

export interface ErrorOptions extends ErrorContext {
  cause?: unknown;
}

export class ExportError extends Error {
  readonly code: ErrorCode;
  override readonly cause?: unknown;
  school?: string;
  resource?: string;
  endpoint?: string;
  status?: number;
  retryable?: boolean;

  constructor(code: ErrorCode, message: string, options: ErrorOptions = {}) {
    super(message);
    this.name = 'ExportError';
    this.code = code;
    if (options.cause !== undefined) this.cause = options.cause;
    this.school = options.school;
    this.resource = options.resource;
    this.endpoint = options.endpoint;
    this.status = options.status;
    this.retryable = options.retryable;
  }

  /** Fills context fields not set yet (an inner error knows the status, an outer one the task). */
  withContext(ctx: ErrorContext): this {
    this.school ??= ctx.school;
    this.resource ??= ctx.resource;
    this.endpoint ??= ctx.endpoint;
    this.status ??= ctx.status;
    this.retryable ??= ctx.retryable;
    return this;
  }

  /** The fields a JSON log line or manifest carries (never the cause: it may hold raw bodies). */
  toJSON(): { code: ErrorCode; message: string } & ErrorContext {
    const { school, resource, endpoint, status, retryable } = this;
    const ctx = Object.entries({ school, resource, endpoint, status, retryable }).filter(([, v]) => v !== undefined);
    return { code: this.code, message: this.message, ...Object.fromEntries(ctx) };
  }
}

/** Usage and configuration problems end the process with exit status 2. */
export class ConfigError extends ExportError {
  constructor(message: string, code: 'E_CONFIG' | 'E_USAGE' = 'E_CONFIG') {
    super(code, message);
    this.name = 'ConfigError';
  }
}

/** HTTP failures from the API, classified once so retry logic and messages agree. */
export class ApiError extends ExportError {
  /** Same as `retryable`, kept for the retry classifier's readability. */
  get retriable(): boolean {
    return this.retryable === true;
  }
  constructor(code: ErrorCode, message: string, opts: { status?: number; retriable: boolean; cause?: unknown } & ErrorContext) {
    super(code, message, { ...opts, retryable: opts.retriable });
    this.name = 'ApiError';
  }
}

export function isExportError(e: unknown): e is ExportError {
  return e instanceof ExportError;
}

/** Codes that mean "fix the configuration", which the CLI answers with exit status 2. */
export const CONFIG_CODES: ReadonlySet<ErrorCode> = new Set([
  'E_CONFIG',
  'E_USAGE',
  'E_AUTH',
  'E_LOCKED',
  'E_LOCK_UNSAFE',
  'E_POLICY_CHANGE',
  'E_FORMAT_CHANGE',
]);

/** Any thrown value as an ExportError: ours pass through, others get `fallback` and keep their cause. */
export function asExportError(e: unknown, fallback: ErrorCode, ctx: ErrorContext = {}): ExportError {
  if (e instanceof ExportError) return e.withContext(ctx);
  return new ExportError(fallback, oneLine(e), { ...ctx, cause: e });
}

/** One line for the user: the message, without a stack. */
export function oneLine(e: unknown): string {
  const msg = e instanceof Error ? e.message : String(e);
  return msg.replace(/\s*\n\s*/g, ' ');
}
