/**
 * Runs `fn` over the items, `concurrency` at a time, taking the next item only when a slot frees.
 * `Promise.all(items.map((x) => limit(...)))` queued a promise and a closure per task before the
 * first began: at 10,000 schools (100,000 tasks) that was tens of megabytes held for the whole
 * run. Here only the begun ones exist, and each item leaves `items` as it is taken, so a task's
 * plan (its previous watermark, its school's prefetched permissions) is garbage once the task
 * ends, not at the end of the run. `fn` must not reject (a task records its own failure).
 *
 * An item holds its slot until it calls `freeSlot` or ends. A task frees it once its last piece is
 * handed to the committer: what is left (the manifest part, its state) makes no request, and a
 * task waiting for it in a slot kept the next one from starting, so the committer's batches held
 * fewer tasks (more parts, more state writes, more fsyncs a school). At most `backlog` items are
 * begun and not ended, which bounds what the waiting ones hold.
 */
export async function runEach<T>(
  items: (T | undefined)[],
  concurrency: number,
  fn: (item: T, freeSlot: () => void) => Promise<void>,
  backlog = concurrency,
): Promise<void> {
  const slots = new Set<Promise<void>>();
  const begun = new Set<Promise<void>>();
  const limit = Math.max(backlog, concurrency);
  for (let i = 0; i < items.length; i++) {
    while (slots.size >= concurrency || begun.size >= limit) await Promise.race(slots.size >= concurrency ? slots : begun);
    const item = items[i] as T;
    items[i] = undefined;
    let freeSlot!: () => void;
    const slot: Promise<void> = new Promise<void>((r) => (freeSlot = r)).then(() => void slots.delete(slot));
    slots.add(slot);
    const whole: Promise<void> = fn(item, freeSlot).finally(() => {
      freeSlot();
      begun.delete(whole);
    });
    begun.add(whole);
  }
  await Promise.all(begun);
  items.length = 0;
}
