import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalSink } from '../../src/sink/local.ts';
import { readState, statePath, updateState } from '../../src/manifest/state-store.ts';
import type { ResourceState } from '../../src/manifest/types.ts';

const rs = (watermark: string): ResourceState => ({ watermark, last_run_id: 'r', last_full_at: null });

/** A promise the test resolves when it chooses: "mid-update" happens at a known point. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { opened, open };
}

describe("updateState's in-process lock", () => {
  let dir: string;
  let sink: LocalSink;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'state-lock-'));
    sink = new LocalSink(dir);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('concurrent updates of one school lose nothing: each sees the one before', async () => {
    const names = Array.from({ length: 12 }, (_, i) => `resource_${i}`);
    await Promise.all(
      names.map((n) =>
        updateState(sink, 'uk', 'A1001', async (s) => {
          // Yield inside the read-modify-write, as a real mutation that does I/O would.
          await new Promise((r) => setImmediate(r));
          s.resources[n] = rs(`2026-01-01T00:00:00.000Z`);
        }),
      ),
    );
    const s = await readState(sink, 'uk', 'A1001');
    expect(Object.keys(s.resources).sort()).toEqual([...names].sort());
  });

  it('updates run in the order they were asked for', async () => {
    const seen: string[] = [];
    const first = gate();
    const aInside = gate();
    const a = updateState(sink, 'uk', 'A1001', async (s) => {
      seen.push(`a saw ${Object.keys(s.resources).join(',')}`);
      aInside.open();
      await first.opened;
      s.resources.a = rs('2026-01-01T00:00:00.000Z');
    });
    const b = updateState(sink, 'uk', 'A1001', (s) => {
      seen.push(`b saw ${Object.keys(s.resources).join(',')}`);
      s.resources.b = rs('2026-01-01T00:00:00.000Z');
    });
    await aInside.opened;
    // b's own read would be a few I/O turns away: give it those, and it still waits for a.
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    expect(seen).toEqual(['a saw ']);
    first.open();
    await Promise.all([a, b]);
    expect(seen).toEqual(['a saw ', 'b saw a']);
  });

  it('a failing update writes nothing, rejects only its caller and does not block the next', async () => {
    await updateState(sink, 'uk', 'A1001', (s) => {
      s.resources.kept = rs('2026-01-01T00:00:00.000Z');
    });
    const failing = updateState(sink, 'uk', 'A1001', (s) => {
      s.resources.lost = rs('2026-01-02T00:00:00.000Z');
      throw new Error('mutation failed');
    });
    const next = updateState(sink, 'uk', 'A1001', (s) => {
      s.resources.next = rs('2026-01-03T00:00:00.000Z');
    });
    await expect(failing).rejects.toThrow('mutation failed');
    const after = await next;
    expect(Object.keys(after.resources).sort()).toEqual(['kept', 'next']);
    expect(Object.keys((await readState(sink, 'uk', 'A1001')).resources).sort()).toEqual(['kept', 'next']);
  });

  it('different schools (and destinations) do not wait for each other', async () => {
    const other = mkdtempSync(join(tmpdir(), 'state-lock-other-'));
    try {
      const otherSink = new LocalSink(other);
      const held = gate();
      const slow = updateState(sink, 'uk', 'A1001', async () => {
        await held.opened;
      });
      // Both finish while A1001's update is still held open.
      await updateState(sink, 'uk', 'A1002', (s) => {
        s.resources.x = rs('2026-01-01T00:00:00.000Z');
      });
      await updateState(otherSink, 'uk', 'A1001', (s) => {
        s.resources.x = rs('2026-01-01T00:00:00.000Z');
      });
      held.open();
      await slow;
      expect(Object.keys((await readState(otherSink, 'uk', 'A1001')).resources)).toEqual(['x']);
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });

  it('an unreadable state file fails the update with E_STATE naming the file, and is left as it was', async () => {
    const p = join(dir, ...statePath('uk', 'A1001').split('/'));
    mkdirSync(join(p, '..'), { recursive: true });
    writeFileSync(p, '{ not json');
    await expect(updateState(sink, 'uk', 'A1001', () => undefined)).rejects.toMatchObject({
      code: 'E_STATE',
      message: expect.stringContaining('_state/region=uk/school_id=A1001.json'),
    });
    expect(readFileSync(p, 'utf8')).toBe('{ not json');
  });
});
