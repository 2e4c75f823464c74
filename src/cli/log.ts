import type { LogLevel } from '../config/schema.ts';

/**
 * Log lines for machines and people, the same in `run` and `webhooks serve`: one JSON object per
 * line with `level`, `time` (ISO 8601 UTC) and `event` (snake_case) first, then the event's
 * fields; or, on a terminal, a short line. Callers pass ids and counts, never a token or a
 * person-related value.
 */
export const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];
const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export type LogEvent = { event: string; level?: LogLevel } & Record<string, unknown>;

/** A level for events that do not name one: failures are errors, refusals and warnings are warnings. */
export function levelOf(e: LogEvent): LogLevel {
  if (e.level) return e.level;
  if (/(^|_)(failed|error)$/.test(e.event)) return 'error';
  if (/(^|_)(rejected|warning|skipped)$/.test(e.event)) return 'warn';
  if (e.event === 'run_exit' && (e.code !== 0 || e.signal)) return 'warn';
  return 'info';
}

export function logLine(e: LogEvent, o: { tty?: boolean; now?: Date } = {}): string {
  const { event, level: _level, ...rest } = e;
  const level = levelOf(e);
  const time = (o.now ?? new Date()).toISOString();
  if (!o.tty) return JSON.stringify({ level, time, event, ...rest }) + '\n';
  const detail = Object.entries(rest)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');
  const tag = level === 'info' ? '' : ` ${level.toUpperCase()}`;
  // a terminal line must not carry control characters from a value (terminal escapes)
  return `${time.slice(11, 19)}${tag} ${event} ${detail}`.trimEnd().replace(/[\u0000-\u001f\u007f]/g, '\uFFFD') + '\n';
}

export interface Logger {
  (e: LogEvent): void;
  level: LogLevel;
}

/** Writes events at `level` or above to `out` (stderr by default). */
export function createLogger(o: { level?: LogLevel; tty?: boolean; out?: NodeJS.WritableStream; now?: () => Date } = {}): Logger {
  const level = o.level ?? 'info';
  const out = o.out ?? process.stderr;
  const log = ((e: LogEvent) => {
    if (RANK[levelOf(e)] < RANK[level]) return;
    out.write(logLine(e, { tty: o.tty, now: o.now?.() }));
  }) as Logger;
  log.level = level;
  return log;
}
