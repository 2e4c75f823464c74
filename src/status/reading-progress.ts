/**
 * One line on a terminal while `status` reads the schools' state files: on S3 each is a request,
 * and 10,000 of them take about 40 s that would otherwise pass in silence. Shown only on a
 * terminal and only for many schools (a local destination answers in about a second), redrawn in
 * place at each whole percent (at most 101 writes, whatever the number of schools), cut to the
 * terminal's width, and erased
 * before the report is printed, so stdout's report and a pipe's copy of stderr stay as they were.
 */
export const PROGRESS_FROM_SCHOOLS = 1_000;

export interface ReadingProgress {
  update(read: number, total: number): void;
  /** erases the line, if one was shown */
  done(): void;
}

export function readingProgress(err: { write(s: string): unknown; isTTY?: boolean; columns?: number }): ReadingProgress | undefined {
  if (!err.isTTY) return undefined;
  let shown = -1;
  return {
    update(read, total) {
      if (total < PROGRESS_FROM_SCHOOLS) return;
      const percent = Math.floor((read * 100) / total);
      if (percent === shown) return;
      shown = percent;
      const line = `status: read ${read.toLocaleString('en')} of ${total.toLocaleString('en')} state files (${percent}%)`;
      // cut to the terminal's width: a wrapped line would not be erased by the next \r
      err.write(`\r\x1b[K${err.columns ? line.slice(0, err.columns - 1) : line}`);
    },
    done() {
      if (shown >= 0) err.write('\r\x1b[K');
    },
  };
}
