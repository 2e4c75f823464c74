/** Messages between the encoding pool (pool.ts) and its worker threads (worker.ts). */
import type { FlattenContext } from '../flatten/index.ts';
import type { PageMeta } from '../decode/index.ts';
import type { FormatOptions } from '../format/types.ts';
import type { ResourceSpec } from '../resources/types.ts';
import type { PageResult, WireError } from './page-work.ts';
import type { EncoderKind } from './record-code.ts';

export interface TaskSetup {
  /** plain data (no `prepare` function: such resources are not encoded here) */
  spec: ResourceSpec;
  format: EncoderKind;
  formatOptions: FormatOptions;
  ctx: FlattenContext;
  /** send back the key column's values (snapshot id lists) */
  keyField?: string;
}

export type ToWorker =
  | { t: 'open'; task: number; setup: TaskSetup }
  | { t: 'page'; task: number; page: number; body: Uint8Array; gzip: boolean }
  | { t: 'close'; task: number };

export type FromWorker =
  | { t: 'meta'; page: number; meta: PageMeta | undefined; rows: number; bytes: number }
  | { t: 'done'; page: number; result: PageResult }
  | { t: 'error'; page: number; error: WireError }
  | { t: 'closed'; task: number; drift: [string, string[]][] };
