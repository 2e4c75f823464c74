// Preloaded (`node --import ./bench/rusage.mjs ...`) into a command the benchmark measures: when
// the process exits, however it exits, its peak RSS (KB) and CPU time (user + system, µs, every
// thread) go to the file named by BENCH_RUSAGE_FILE. See bench/scale.ts.
import { writeFileSync } from 'node:fs';

process.on('exit', () => {
  const file = process.env.BENCH_RUSAGE_FILE;
  if (!file) return;
  const cpu = process.cpuUsage();
  writeFileSync(file, JSON.stringify({ maxRssKB: process.resourceUsage().maxRSS, cpuUs: cpu.user + cpu.system }));
});
