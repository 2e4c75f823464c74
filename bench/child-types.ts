/** What bench/export-child.mjs takes (one JSON argument) and prints (one JSON line). */
import type { PipelineConfig } from '../src/config/schema.ts';

export interface ChildArgs {
  apiUrl: string;
  domains: Record<string, string>;
  token: string;
  dest: string;
  format: 'ndjson' | 'csv' | 'parquet';
  resources: string[];
  concurrency?: number;
  connectionsPerDomain?: number;
  fullRefresh?: boolean;
  s3Endpoint?: string;
  schools?: string[];
  /** any other pipeline-file settings (e.g. row_group_rows), as a user would set them */
  config?: PipelineConfig;
}

export interface ChildResult {
  ms: number;
  /** CPU time (user + system, every thread) during runExport, ms: above wall x cores, a run is bound by CPU */
  cpuMs: number;
  rows: Record<string, number>;
  pages: number;
  /** decompressed response bytes of paginated pages */
  bytes: number;
  maxRssMB: number;
  /** peaks of process.memoryUsage() sampled every 100 ms, MB: where the RSS goes */
  peaks: { heapTotal: number; heapUsed: number; external: number; arrayBuffers: number };
  status: string;
  failures: unknown[];
  /** 'dist' (compiled, plain Node: what the installed command runs) or 'src' (through tsx) */
  code: 'dist' | 'src';
}
