/** Injected failures, consumed in the order they were added, each by the first request it matches. */
export type FaultKind = '429' | '500' | '502' | '503' | '423' | 'reset' | 'truncated-gzip' | 'slow';
export const FAULT_KINDS: readonly FaultKind[] = ['429', '500', '502', '503', '423', 'reset', 'truncated-gzip', 'slow'];

export interface FaultRule {
  kind: FaultKind;
  /** How many matching requests it hits; default 1. */
  times?: number;
  /** Substring of (or RegExp tested on) the request's path and query. */
  path?: string | RegExp;
  /** Retry-After header: seconds, or an HTTP date string. */
  retryAfter?: number | string;
  /** For 'slow': how long to wait before answering (default 1000 ms). */
  delayMs?: number;
  /** Only requests to this region's listener. */
  region?: string;
}

interface Armed {
  rule: FaultRule;
  left: number;
}

export class FaultQueue {
  private armed: Armed[] = [];

  add(rule: FaultRule): void {
    if (!FAULT_KINDS.includes(rule.kind)) throw new Error(`unknown fault kind ${JSON.stringify(rule.kind)}`);
    const times = rule.times ?? 1;
    if (!Number.isInteger(times) || times < 1) throw new Error('fault times must be a positive integer');
    this.armed.push({ rule, left: times });
  }

  clear(): void {
    this.armed = [];
  }

  take(pathAndQuery: string, region: string): FaultRule | undefined {
    const hit = this.armed.find((a) => matches(a.rule, pathAndQuery, region));
    if (!hit) return undefined;
    if (--hit.left === 0) this.armed.splice(this.armed.indexOf(hit), 1);
    return hit.rule;
  }
}

function matches(rule: FaultRule, pathAndQuery: string, region: string): boolean {
  if (rule.region !== undefined && rule.region !== region) return false;
  if (rule.path === undefined) return true;
  return typeof rule.path === 'string' ? pathAndQuery.includes(rule.path) : rule.path.test(pathAndQuery);
}
