/**
 * The setting of a unit test of the example pipeline (`tasks/nightly-sales.ts`) on the in-memory
 * fakes: a partitions folder of its own (`KAJ_PARTITIONS_DIR`) and fake timers at 2026-12-01
 * (`setImmediate` left real: a workflow's suspension waits for it), both undone after each test.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, vi } from 'vitest';

/** Registers the hooks; `dir()` is the current test's partitions folder. */
export function examplePipelineSetting(): { readonly dir: () => string } {
  let dir = '';
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'kaj-partitions-'));
    vi.stubEnv('KAJ_PARTITIONS_DIR', dir);
    vi.useFakeTimers({
      now: Date.parse('2026-12-01T00:00:00Z'),
      toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'],
    });
  });
  afterEach(() => {
    vi.useRealTimers();
    vi.unstubAllEnvs();
    rmSync(dir, { recursive: true, force: true });
  });
  return { dir: () => dir };
}
