/**
 * What every benchmark prints with: medians of runs, numbers and dollars formatted alike,
 * fixed-width tables, and numeric options checked the same way.
 *
 * @module
 */

/** The median (the mean of the middle two for an even count). */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) throw new RangeError('median of nothing');
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/** `fn(1)`, `fn(2)`, … `fn(runs)`, one after another. */
export async function repeat<T>(runs: number, fn: (run: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let r = 1; r <= runs; r += 1) out.push(await fn(r));
  return out;
}

/** `v` to `digits` places without trailing zeros (0 is `0`), thousands grouped with commas unless `group` is false. */
export function fmt(v: number, digits = 2, group = true): string {
  if (v === 0) return '0';
  const s = v.toFixed(digits);
  const t = s.includes('.') ? s.replace(/0+$/, '').replace(/\.$/, '') : s;
  if (!group) return t;
  const [int, frac] = t.split('.');
  const grouped = (int ?? '').replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return frac === undefined ? grouped : `${grouped}.${frac}`;
}

export const usd = (v: number, digits = 2): string => `$${v.toFixed(digits)}`;

/**
 * A table: the first column left-aligned in `widths[0]`, the others right-aligned in their width
 * (the last width for any column beyond); a row of one cell is a heading, printed as it is.
 */
export function printTable(
  header: readonly string[],
  rows: readonly (readonly string[])[],
  widths: readonly number[],
): void {
  const width = (i: number): number => widths[Math.min(i, widths.length - 1)] ?? 16;
  const line = (cells: readonly string[]): string =>
    cells.map((c, i) => (i === 0 ? c.padEnd(width(0)) : c.padStart(width(i)))).join(' ');
  console.log(line(header));
  console.log(line(header.map((_, i) => '-'.repeat(width(i)))));
  for (const r of rows) console.log(r.length === 1 ? `${r[0]}` : line(r));
}

/** A Markdown table; with `rightAlign`, every column but the first is right-aligned. */
export function markdownTable(
  head: readonly string[],
  rows: readonly (readonly string[])[],
  rightAlign = false,
): string {
  const row = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  const rule = head.map((_, i) => (rightAlign && i > 0 ? '---:' : '---'));
  return [row(head), row(rule), ...rows.map(row)].join('\n');
}

/** `  label`, the median of `values` (2 places, right-aligned in `width`), and every run's value. */
export function medianLine(label: string, values: readonly number[], width: number): string {
  return `  ${label}${median(values).toFixed(2).padStart(width)}   (runs: ${values.map((v) => v.toFixed(2)).join(', ')})`;
}

/** A numeric option's value; exits with status 2 and a message when it is not a number ≥ `min` (whole, with `integer`). */
export function num(text: string | undefined, name: string, integer: boolean, min: number): number {
  const v = Number(text);
  if (!Number.isFinite(v) || v < min || (integer && !Number.isInteger(v))) {
    console.error(`--${name} must be ${integer ? 'an integer' : 'a number'} >= ${min}, got "${text}"`);
    process.exit(2);
  }
  return v;
}
