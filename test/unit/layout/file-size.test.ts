/**
 * The house rule that keeps `shared/` readable: no module over 400 lines. A file that grows past
 * it is split by role (one file per question a newcomer asks: docs/architecture.md, code map).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const REPO = resolve(import.meta.dirname, '../../..');
const MAX_LINES = 400;

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return tsFiles(p);
    return e.name.endsWith('.ts') ? [p] : [];
  });
}

/** Lines of text (a last line without its newline counts). */
function lineCount(text: string): number {
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
}

describe('shared/ module size', () => {
  it(`has no module over ${MAX_LINES} lines`, () => {
    const files = tsFiles(join(REPO, 'shared'));
    expect(files.length).toBeGreaterThan(50);
    const over = files
      .map((f) => ({ file: relative(REPO, f), lines: lineCount(readFileSync(f, 'utf8')) }))
      .filter((f) => f.lines > MAX_LINES);
    expect(over).toEqual([]);
  });
});
