/**
 * `local/worker.ts` and the task registries it loads, bundled once with esbuild, so that a spawned
 * worker starts on plain `node`: no TypeScript loader resolving and transforming hundreds of files
 * in each child. A worker started that way needs about a third of the CPU (0.4 s instead of 1.2 s
 * on a 2-core machine) and is ready seconds sooner under load; it also runs code
 * bundled as a Lambda function's is.
 *
 * The bundle keeps `node_modules` packages external (resolved from the repository, as under tsx)
 * and splits shared code into chunks, so that the worker and a registry module share one copy of
 * each module (the worker checks `instanceof TaskRegistry`).
 *
 * The test run builds it once (`test/support/global-setup.ts`) and names its folder in
 * {@link WORKER_BUNDLE_ENV}; `spawnWorker` (./worker-process.ts) uses it when that is set, tsx otherwise.
 *
 * @module
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

/** The repository's root folder. */
export const REPO_ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '..');

/** The environment variable naming a built bundle's folder (absolute). */
export const WORKER_BUNDLE_ENV = 'KAJ_WORKER_BUNDLE';

/** The worker's entry point, from the repository root. */
export const WORKER_ENTRY = 'local/worker.ts';

/** Where `module` (a `.ts` path from the repository root) is in the bundle at `dir`. */
export function bundledPath(dir: string, module: string): string {
  return join(dir, module.replace(/\.ts$/, '.js'));
}

/**
 * Bundles the worker and `registryModules` (paths from the repository root) into a new folder
 * under `.tmp/` (inside the repository, so that packages resolve from its `node_modules`).
 * Returns the folder and a function that deletes it.
 */
export async function buildWorkerBundle(
  registryModules: readonly string[],
): Promise<{ dir: string; remove(): Promise<void> }> {
  await mkdir(join(REPO_ROOT, '.tmp'), { recursive: true });
  const dir = await mkdtemp(join(REPO_ROOT, '.tmp', 'worker-bundle-'));
  await build({
    entryPoints: [WORKER_ENTRY, ...registryModules].map((m) => join(REPO_ROOT, m)),
    absWorkingDir: REPO_ROOT,
    outbase: REPO_ROOT,
    outdir: relative(REPO_ROOT, dir),
    bundle: true,
    splitting: true,
    packages: 'external',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outExtension: { '.js': '.js' },
    sourcemap: 'linked',
    logLevel: 'warning',
  });
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}
