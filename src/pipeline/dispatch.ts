/**
 * Runs `fn` over the items, `concurrency` at a time, taking the next item only when one ends.
 * `Promise.all(items.map((x) => limit(...)))` queued a promise and a closure per task before the
 * first began: at 10,000 schools (100,000 tasks) that was tens of megabytes held for the whole
 * run. Here only the running ones exist, and each item leaves `items` as it is taken, so a task's
 * plan (its previous watermark, its school's prefetched permissions) is garbage once the task
 * ends, not at the end of the run. `fn` must not reject (a task records its own failure).
 */
export async function runEach<T>(items: (T | undefined)[], concurrency: number, fn: (item: T) => Promise<void>): Promise<void> {
  const running = new Set<Promise<void>>();
  for (let i = 0; i < items.length; i++) {
    if (running.size >= concurrency) await Promise.race(running);
    const item = items[i] as T;
    items[i] = undefined;
    const p: Promise<void> = fn(item).finally(() => running.delete(p));
    running.add(p);
  }
  await Promise.all(running);
  items.length = 0;
}
