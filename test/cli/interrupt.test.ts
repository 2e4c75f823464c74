import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { onInterrupt } from '../../src/cli/interrupt.ts';

function fakeProcess() {
  const proc = Object.assign(new EventEmitter(), { exits: [] as number[], text: '' });
  return Object.assign(proc, {
    exit: (code: number) => void proc.exits.push(code),
    stderr: { write: (t: string) => (proc.text += t) },
  });
}

describe('signals', () => {
  it('the first signal aborts the run and names the exit status; a second one exits at once', () => {
    const proc = fakeProcess();
    const i = onInterrupt(proc);
    expect(i.signal.aborted).toBe(false);
    proc.emit('SIGTERM', 'SIGTERM');
    expect(i.signal.aborted).toBe(true);
    expect(i.exitCode()).toBe(143);
    expect(proc.exits).toEqual([]);
    expect(proc.text).toMatch(/SIGTERM received: stopping .* send it again to exit at once/);
    proc.emit('SIGINT', 'SIGINT');
    expect(proc.exits).toEqual([130]);
    i.dispose();
    expect(proc.listenerCount('SIGINT') + proc.listenerCount('SIGTERM')).toBe(0);
  });

  it('SIGINT exits 130', () => {
    const proc = fakeProcess();
    const i = onInterrupt(proc);
    proc.emit('SIGINT', 'SIGINT');
    expect(i.exitCode()).toBe(130);
    i.dispose();
  });

  it('the run signal takes a listener per request in flight without a MaxListeners warning on stderr', async () => {
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    const i = onInterrupt(fakeProcess());
    for (let n = 0; n < 64; n++) i.signal.addEventListener('abort', () => {});
    await new Promise((r) => setImmediate(r)); // warnings are emitted on the next tick
    process.off('warning', onWarning);
    expect(warnings.map((w) => w.name)).toEqual([]);
    i.dispose();
  });
});
