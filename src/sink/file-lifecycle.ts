import type { Writable } from 'node:stream';
import { ExportError, oneLine } from '../errors.ts';
import type { SinkFile } from './types.ts';

export interface CommitResult {
  bytes: number;
  sha256: string;
}

/** What a sink does for one file; the rules of when each may run live in sinkFile(). */
export interface FileSteps {
  /** 'file:///…' or 's3://…', for messages. */
  describe: string;
  /** Makes the bytes durable and visible at the final name; on failure it leaves nothing behind itself. */
  commit(): Promise<CommitResult>;
  /** Throws the bytes away (temp file, multipart upload). Runs at most once. */
  discard(): Promise<void>;
}

/**
 * The commit/abort skeleton every sink file shares: commit runs once and every later call gets
 * its result; abort after (or during) a commit waits for it and changes nothing, since a failed
 * commit cleaned up itself; abort runs the discard once; commit after abort is refused.
 */
export function sinkFile(stream: Writable, steps: FileSteps): SinkFile {
  let committing: Promise<CommitResult> | undefined;
  let discarding: Promise<void> | undefined;
  const commit = async (): Promise<CommitResult> => {
    if (discarding) throw new ExportError('E_SINK', `cannot commit ${steps.describe}: it was aborted`);
    return steps.commit();
  };
  return {
    stream,
    commit: () => (committing ??= commit()),
    async abort() {
      if (committing) return void (await committing.catch(() => {}));
      try {
        await (discarding ??= steps.discard());
      } catch (e) {
        throw new ExportError('E_SINK', `discarding ${steps.describe} failed: ${oneLine(e)}`, { cause: e });
      }
    },
  };
}
