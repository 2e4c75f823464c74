/**
 * Incremental windows. The spec does not say in which time zone the service reads
 * updated_after, so we send the watermark as a naive UTC time ("YYYY-MM-DD HH:MM:SS") minus a
 * lookback. Read as UTC, the window starts exactly `lookback` early; read as Europe/London (the
 * service's home), the same text names an instant up to one hour EARLIER, so the window only
 * grows. Either way no change is missed; the overlap produces duplicates that loaders resolve
 * by (school, id, updated_at).
 *
 * The watermark itself is the server's clock when the task's first page was answered (its Date
 * header), never the largest updated_at seen: a cursor walk in id order can pass a row before it
 * changes, so only "everything changed before the walk began" is known to be complete.
 */
export function updatedAfterParam(watermarkIso: string, lookbackSeconds: number): string {
  const t = Date.parse(watermarkIso) - lookbackSeconds * 1000;
  return new Date(t).toISOString().slice(0, 19).replace('T', ' ');
}

/** The new watermark: the task's start on the server's clock, never moving backwards. */
export function nextWatermark(previous: string | null | undefined, taskStart: Date): string {
  const start = new Date(Math.floor(taskStart.getTime() / 1000) * 1000).toISOString();
  if (previous && Date.parse(previous) > Date.parse(start)) return previous;
  return start;
}

/** Tables without deletion records get a full snapshot when the last one is this old. */
export function snapshotDue(lastFullAt: string | null | undefined, everyHours: number, now: Date): boolean {
  if (!lastFullAt) return true;
  if (everyHours <= 0) return false;
  return now.getTime() - Date.parse(lastFullAt) >= everyHours * 3600_000;
}
