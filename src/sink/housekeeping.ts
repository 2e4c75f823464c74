import { oneLine } from '../errors.ts';
import { refusalOf } from './s3-ops.ts';

/**
 * Housekeeping (sweeping incomplete uploads, old leases, what killed runs left) is best effort: it
 * never stops an export. A store that lacks an operation, or credentials that lack its
 * permission, make one warning per run naming the operation and the IAM permission (docs/s3.md);
 * any other failure of a sweep is one warning too, and the next run tries again.
 */
export interface HousekeepingWarning {
  /** What was being done ("sweeping incomplete uploads"), and the S3 operation when a store refused one. */
  what: string;
  operation?: string;
  permission?: string;
  message: string;
}

export class Housekeeping {
  private readonly seen = new Map<string, HousekeepingWarning>();

  constructor(private readonly onWarning: (w: HousekeepingWarning) => void = () => undefined) {}

  /** Records a failed housekeeping step: once per operation (or per step for other failures) per run. */
  failed(what: string, e: unknown): void {
    const r = refusalOf(e);
    const key = r ? `${r.operation}:${r.kind}` : what;
    if (this.seen.has(key)) return;
    const message = r
      ? r.kind === 'AccessDenied'
        ? `${what} skipped: ${r.operation} was denied; grant ${r.permission} to the credentials (docs/s3.md) so runs clean up after killed ones; the export went on`
        : `${what} skipped: the store does not implement ${r.operation} (${r.permission}); the export went on (docs/s3.md says what is lost)`
      : `${what} failed (${oneLine(e)}); the export went on and the next run tries again`;
    const w: HousekeepingWarning = { what, ...(r ? { operation: r.operation, permission: r.permission } : {}), message };
    this.seen.set(key, w);
    this.onWarning(w);
  }

  /** Whether this error is a refusal (unsupported or denied): callers that can do without the operation go on. */
  static refused(e: unknown): boolean {
    return refusalOf(e) !== undefined;
  }

  /** Runs a housekeeping step; its failure becomes a warning instead of the run's. */
  async bestEffort(what: string, step: () => Promise<unknown>): Promise<void> {
    try {
      await step();
    } catch (e) {
      this.failed(what, e);
    }
  }

  warnings(): HousekeepingWarning[] {
    return [...this.seen.values()];
  }
}
