/**
 * When a long read commits what it has so far: every `everyPages` pages or `everyMs` of the
 * clock, whichever comes first. The clock is injected so tests count pages, never wait.
 */
export interface CheckpointTimer {
  due(pages: number): boolean;
  reset(pages: number): void;
}

export class CheckpointPolicy {
  constructor(
    readonly everyPages: number,
    readonly everyMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Never: a read commits once, at its end (what --checkpoint-pages 0 asks for). */
  static readonly never = new CheckpointPolicy(0, 0);

  start(pages = 0): CheckpointTimer {
    let lastPages = pages;
    let lastAt = this.now();
    return {
      due: (pages) =>
        (this.everyPages > 0 && pages - lastPages >= this.everyPages) || (this.everyMs > 0 && this.now() - lastAt >= this.everyMs),
      reset: (pages) => {
        lastPages = pages;
        lastAt = this.now();
      },
    };
  }
}
