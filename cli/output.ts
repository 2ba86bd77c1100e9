/** Terminal output: tables, JSON, relative times, and a progress line on stderr. */

export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  readonly stdoutIsTTY: boolean;
  readonly stderrIsTTY: boolean;
  readonly stdinIsTTY: boolean;
  /** Terminal width, when known. */
  readonly columns?: number;
}

export function processIo(): CliIo {
  return {
    // Once a reader has gone (`kaj … | head`), its stream is closed: write nothing more there.
    out: (t) => void (process.stdout.writable && process.stdout.write(t)),
    err: (t) => void (process.stderr.writable && process.stderr.write(t)),
    stdoutIsTTY: process.stdout.isTTY === true,
    stderrIsTTY: process.stderr.isTTY === true,
    stdinIsTTY: process.stdin.isTTY === true,
    ...(process.stdout.columns === undefined ? {} : { columns: process.stdout.columns }),
  };
}

export function json(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

export function truncate(s: string, n: number): string {
  const one = s.replace(/[\r\n\t]+/g, ' ');
  return one.length > n ? `${one.slice(0, Math.max(1, n - 1))}…` : one;
}

/** A plain, left-aligned table with a header row. Cells are single-line. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return `${[line(headers), ...rows.map(line)].join('\n')}\n`;
}

/** `3m ago`, `2h ago`, `4d ago` (or `in 5m` for a future time). */
export function ago(iso: string | undefined, now: number): string {
  if (iso === undefined) return '-';
  const t = Date.parse(iso);
  if (!Number.isFinite(t)) return '-';
  const s = Math.round((now - t) / 1000);
  const abs = Math.abs(s);
  const v =
    abs < 60
      ? `${abs}s`
      : abs < 3600
        ? `${Math.floor(abs / 60)}m`
        : abs < 86_400
          ? `${Math.floor(abs / 3600)}h`
          : `${Math.floor(abs / 86_400)}d`;
  return s >= 0 ? `${v} ago` : `in ${v}`;
}

export function seconds(n: number): string {
  if (n < 60) return `${n}s`;
  if (n < 3600) return `${Math.floor(n / 60)}m${n % 60 ? `${n % 60}s` : ''}`;
  return `${Math.floor(n / 3600)}h${Math.floor((n % 3600) / 60)}m`;
}

/** Two blocks of `key: value` lines, side by side (or one after the other on a narrow terminal). */
export function sideBySide(
  left: { title: string; lines: string[] },
  right: { title: string; lines: string[] },
  width = 120,
): string {
  const col = Math.floor((width - 3) / 2);
  if (col < 40) return `${left.title}\n${left.lines.join('\n')}\n\n${right.title}\n${right.lines.join('\n')}\n`;
  const l = [left.title, '-'.repeat(Math.min(col, left.title.length)), ...left.lines];
  const r = [right.title, '-'.repeat(Math.min(col, right.title.length)), ...right.lines];
  const n = Math.max(l.length, r.length);
  const out: string[] = [];
  for (let i = 0; i < n; i += 1) {
    out.push(`${truncate(l[i] ?? '', col).padEnd(col)} │ ${truncate(r[i] ?? '', col)}`.trimEnd());
  }
  return `${out.join('\n')}\n`;
}

/** A one-line progress bar on stderr, redrawn at most ~10 times a second. Silent when stderr is not a terminal. */
export class Progress {
  private last = 0;
  private drawn = false;
  private readonly started = Date.now();

  constructor(
    private readonly io: CliIo,
    private readonly label: string,
    private total: number | undefined,
  ) {}

  update(done: number, suffix: string, force = false): void {
    if (!this.io.stderrIsTTY) return;
    const now = Date.now();
    if (!force && now - this.last < 100) return;
    this.last = now;
    const total = this.total !== undefined && this.total >= done ? this.total : undefined;
    const width = 24;
    const filled = total === undefined || total === 0 ? 0 : Math.round((done / total) * width);
    const bar = total === undefined ? '' : `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] `;
    const rate = done / Math.max(0.001, (now - this.started) / 1000);
    const count = total === undefined ? `${done}` : `${done}/${total}`;
    this.io.err(`\r\x1b[2K${this.label} ${bar}${count}  ${rate.toFixed(1)}/s  ${suffix}`);
    this.drawn = true;
  }

  finish(): void {
    if (this.drawn) this.io.err('\r\x1b[2K');
    this.drawn = false;
  }
}
