/** Runs `fn` `repeat` times and keeps the fastest time: the least noisy figure on a shared machine. */
export async function bestOf(repeat: number, fn: () => Promise<number> | number): Promise<{ ms: number; rows: number }> {
  let ms = Infinity;
  let rows = 0;
  for (let i = 0; i < repeat; i++) {
    const t0 = performance.now();
    rows = await fn();
    ms = Math.min(ms, performance.now() - t0);
  }
  return { ms, rows };
}
