/**
 * A terminal, as far as the live display needs one: a screen of `columns` × `rows` above a
 * scrollback, automatic wrap at the right margin, \n as CR LF (a TTY's output processing), \r,
 * and the escapes the display writes: cursor up (ESC [ n A, stopping at the screen's top), erase
 * to the end of the screen (ESC [ J / ESC [ 0 J) and of the line (ESC [ K). Anything else is an
 * error, so a display that starts writing other escapes fails its test instead of passing unseen.
 * It is also the WriteStream handed to the reporter (isTTY, columns, rows, write).
 */
export class FakeTerminal {
  readonly isTTY = true;
  /** Every line ever shown: the scrollback, then the screen. */
  readonly buffer: string[] = [''];
  private row = 0;
  private col = 0;
  /** Times a line ran past the right margin and the terminal wrapped it. */
  wraps = 0;

  constructor(
    public columns: number,
    public rows = 24,
  ) {}

  write(s: string): boolean {
    for (let i = 0; i < s.length; i++) {
      const c = s[i]!;
      if (c === '\x1b') {
        const m = /^\x1b\[(\d*)([A-Za-z])/.exec(s.slice(i));
        if (!m) throw new Error(`unknown escape at ${JSON.stringify(s.slice(i, i + 8))}`);
        this.escape(m[2]!, m[1] === '' ? undefined : Number(m[1]));
        i += m[0].length - 1;
      } else if (c === '\n') this.newline();
      else if (c === '\r') this.col = 0;
      else this.put(c);
    }
    return true;
  }

  /** The screen's lines as shown now (trailing blank lines dropped). */
  screen(): string[] {
    const lines = this.buffer.slice(this.screenTop());
    while (lines.length && lines.at(-1) === '') lines.pop();
    return lines;
  }

  /** The scrollback and the screen (trailing blank lines dropped). */
  all(): string[] {
    const lines = [...this.buffer];
    while (lines.length && lines.at(-1) === '') lines.pop();
    return lines;
  }

  private screenTop(): number {
    return Math.max(0, this.buffer.length - this.rows);
  }

  private put(c: string): void {
    if (this.col >= this.columns) {
      this.wraps += 1;
      this.newline();
    }
    const line = this.buffer[this.row]!.padEnd(this.col);
    this.buffer[this.row] = line.slice(0, this.col) + c + line.slice(this.col + 1);
    this.col += 1;
  }

  private newline(): void {
    this.row += 1;
    this.col = 0;
    if (this.row >= this.buffer.length) this.buffer.push('');
  }

  private escape(op: string, n: number | undefined): void {
    switch (op) {
      case 'A':
        this.row = Math.max(this.screenTop(), this.row - (n ?? 1));
        return;
      case 'J':
        if (n !== undefined && n !== 0) throw new Error(`ESC [ ${n} J is not handled`);
        this.buffer[this.row] = this.buffer[this.row]!.slice(0, this.col);
        this.buffer.length = this.row + 1;
        return;
      case 'K':
        this.buffer[this.row] = this.buffer[this.row]!.slice(0, this.col);
        return;
      default:
        throw new Error(`escape ESC [ ${n ?? ''}${op} is not handled`);
    }
  }
}
