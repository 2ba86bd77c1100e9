/**
 * What esbuild puts in a bundle of one entry point, bundled as the stack bundles a function (ESM,
 * Node 22): the input files, repository-relative (`shared/…`, `node_modules/…`). For tests of what
 * an entry carries, and what it must not.
 */
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const REPO_ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');

export async function bundleInputs(entry: string): Promise<string[]> {
  const result = await build({
    entryPoints: [join(REPO_ROOT, entry)],
    absWorkingDir: REPO_ROOT,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    mainFields: ['module', 'main'],
    write: false,
    outfile: 'index.mjs',
    metafile: true,
    logLevel: 'silent',
  });
  return Object.keys(result.metafile.inputs);
}
