/**
 * Size and cold import time of each Lambda bundle, built as the stack builds it.
 *
 *   npm run bench:bundle -- [--runs 5] [--top 12] [--function api|consumer|sweeper|scheduler] [--keep]
 *
 *   npm run bench:bundle -- --runs 3 --top 0     # the table alone (the figures in docs/measured.md)
 *
 * For each function: esbuild with the options `infra/constructs/kaj-function.ts` gives
 * `NodejsFunction` (ESM, node22, minified, source map without sources content, main fields
 * module,main, the `require` banner, AWS SDK bundled: no externals, and the alias
 * `@aws-sdk/credential-provider-node` → `shared/aws/lambda-credentials.ts` it passes as
 * `esbuildArgs`: environment-only credentials), then
 * - the bytes of `index.mjs` (and of its source map),
 * - the cold import time: a fresh `node --enable-source-maps` process (as on Lambda, NODE_OPTIONS)
 *   times `await import(bundle)` with the function's environment set; median and minimum of
 *   `--runs` (≥ 5), the bundles interleaved; and the same without `--enable-source-maps`,
 * - the biggest inputs (esbuild metafile: bytes each contributes to the output), by package and
 *   by file.
 *
 * docs/measured.md ("Speed") records what earlier versions of this bench measured beside today's
 * bundles: the first version's single bundle, the bundles without the credentials alias, and the
 * message schema on `zod/mini`.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { build, type Metafile } from 'esbuild';
import { laneQueueNames } from '../shared/config/lanes.js';
import { FUNCTION_ENTRIES, PRIORITIES, resourceNames } from '../shared/config/resources.js';
import { functionEnvironment } from '../shared/config/settings.js';
import { lanes } from '../tasks/lanes.js';
import { median, num } from './lib/report.js';

const REPO_ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '..');

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '5' },
    top: { type: 'string', default: '12' },
    function: { type: 'string', multiple: true },
    keep: { type: 'boolean', default: false },
  },
});
const RUNS = num(values.runs, 'runs', true, 1);
const TOP = num(values.top, 'top', true, 0);
type FunctionName = keyof typeof FUNCTION_ENTRIES;
const NAMES = (values.function ?? Object.keys(FUNCTION_ENTRIES)) as FunctionName[];
for (const n of NAMES) if (!(n in FUNCTION_ENTRIES)) throw new Error(`unknown function ${n}`);

/** The same string `kaj-function.ts` passes as `banner` (esbuild's ESM output has no `require`). */
const ESM_REQUIRE_SHIM =
  "import { createRequire as __kajCreateRequire } from 'node:module';" +
  'const require = __kajCreateRequire(import.meta.url);';

/** The alias that keeps the SDK's default credential chain (and its STS/SSO clients) out of a bundle. */
const ENV_CREDENTIALS_ALIAS = { '@aws-sdk/credential-provider-node': './shared/aws/lambda-credentials.ts' };

/** esbuild as `NodejsFunction` runs it with `KajFunction`'s `bundling` (bundleAwsSDK: no externals). */
async function bundle(entry: string, outfile: string): Promise<Metafile> {
  const result = await build({
    alias: ENV_CREDENTIALS_ALIAS,
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    target: 'node22',
    format: 'esm',
    outfile,
    minify: true,
    sourcemap: true,
    sourcesContent: false,
    mainFields: ['module', 'main'],
    banner: { js: ESM_REQUIRE_SHIM },
    logLevel: 'warning',
    metafile: true,
    absWorkingDir: REPO_ROOT,
  });
  return result.metafile;
}

/** What a deployed function finds in its environment (the values only need to parse). */
function lambdaEnvironment(): Record<string, string> {
  const url = (name: string) => `https://sqs.us-east-1.amazonaws.com/123456789012/${name}`;
  const queueUrls = Object.fromEntries(PRIORITIES.map((p) => [p, url(`kaj-${p}`)])) as Record<
    (typeof PRIORITIES)[number],
    string
  >;
  const deadLetterQueueUrls = Object.fromEntries(PRIORITIES.map((p) => [p, url(`kaj-${p}-dlq`)])) as typeof queueUrls;
  // The example deployment's lanes, and the schedules, limits and history tables: a consumer whose
  // task types use a limit refuses to start without the limits table (MissingLimiterError), one
  // with a workflow type without the history table (MissingHistoryStoreError).
  const laneQueueUrls = Object.fromEntries(
    Object.keys(lanes).map((lane) => {
      const names = laneQueueNames('kaj', lane);
      return [lane, Object.fromEntries(PRIORITIES.map((p) => [p, url(names[p])])) as typeof queueUrls];
    }),
  );
  const names = resourceNames('kaj');
  return {
    ...functionEnvironment({
      tableName: names.table,
      schedulesTableName: names.schedules,
      limitsTableName: names.limits,
      historyTableName: names.history,
      laneQueueUrls,
      queueUrls,
      deadLetterQueueUrls,
    }),
    KAJ_ID_SECRET: 'bench-secret',
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'AKIDBENCH',
    AWS_SECRET_ACCESS_KEY: 'bench',
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    NODE_OPTIONS: '--enable-source-maps',
  };
}

const IMPORT_TIMER = `
const t0 = performance.now();
await import(process.argv[1]);
process.stdout.write(String(performance.now() - t0));
`;

/** A fresh node process's `import(file)`: wall milliseconds, what a cold start waits. */
function coldImport(file: string, env: Record<string, string>, sourceMaps = true): number {
  const out = spawnSync(process.execPath, ['--input-type=module', '-e', IMPORT_TIMER, file], {
    env: { PATH: process.env.PATH ?? '', ...env, NODE_OPTIONS: sourceMaps ? '--enable-source-maps' : '' },
    encoding: 'utf8',
  });
  if (out.status !== 0) throw new Error(`importing ${file} failed: ${out.stderr}`);
  return Number(out.stdout.trim());
}

const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;

/** `node_modules/@aws-sdk/core/dist-es/x.js` → `@aws-sdk/core`; own files keep their directory. */
function packageOf(input: string): string {
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(input);
  if (m) return m[1] as string;
  return input.split('/').slice(0, 2).join('/');
}

function biggest(meta: Metafile, top: number): { packages: [string, number][]; files: [string, number][] } {
  const byPackage = new Map<string, number>();
  const files: [string, number][] = [];
  for (const out of Object.values(meta.outputs)) {
    for (const [input, { bytesInOutput }] of Object.entries(out.inputs)) {
      byPackage.set(packageOf(input), (byPackage.get(packageOf(input)) ?? 0) + bytesInOutput);
      files.push([input, bytesInOutput]);
    }
  }
  const desc = (a: [string, number], b: [string, number]) => b[1] - a[1];
  return { packages: [...byPackage].sort(desc).slice(0, top), files: files.sort(desc).slice(0, top) };
}

/** A function's bundle, and its cold imports with --enable-source-maps (as deployed) and without (ms). */
interface Built {
  readonly name: FunctionName;
  readonly outfile: string;
  readonly meta: Metafile;
  readonly withMaps: number[];
  readonly withoutMaps: number[];
}

const dir = mkdtempSync(join(tmpdir(), 'kaj-bundle-'));
const env = lambdaEnvironment();
try {
  const built: Built[] = [];
  for (const name of NAMES) {
    const outfile = join(dir, name, 'index.mjs');
    const meta = await bundle(join(REPO_ROOT, FUNCTION_ENTRIES[name]), outfile);
    built.push({ name, outfile, meta, withMaps: [], withoutMaps: [] });
  }

  // Round-robin over the bundles, so that whatever else the machine does weighs on all alike.
  for (const b of built) coldImport(b.outfile, env); // warm the OS file cache, as a deployed image is
  for (let r = 0; r < RUNS; r++) {
    for (const b of built) {
      b.withMaps.push(coldImport(b.outfile, env));
      b.withoutMaps.push(coldImport(b.outfile, env, false));
    }
  }

  process.stdout.write(
    `\nBundles (esbuild ${(await import('esbuild')).version}, KajFunction options), node ${process.version}\n` +
      `Cold import of each bundle in a fresh node, ${RUNS} runs, bundles interleaved: median (minimum) wall ms,\n` +
      `with --enable-source-maps (as deployed) and without. On a shared machine the minimum is the least disturbed run.\n`,
  );
  process.stdout.write(
    `${'function'.padEnd(20)} ${'index.mjs'.padStart(10)} ${'.map'.padStart(10)} ${'source maps'.padStart(16)} ${'no source maps'.padStart(16)}\n`,
  );
  const ms = (xs: number[]) => `${median(xs).toFixed(1)} (${Math.min(...xs).toFixed(1)})`;
  for (const b of built) {
    const size = (file: string) => kb(statSync(file).size).padStart(10);
    process.stdout.write(
      `${b.name.padEnd(20)} ${size(b.outfile)} ${size(`${b.outfile}.map`)} ${ms(b.withMaps).padStart(16)} ${ms(b.withoutMaps).padStart(16)}\n`,
    );
  }

  for (const b of built) {
    const { packages, files } = biggest(b.meta, TOP);
    process.stdout.write(`\n${b.name}: biggest inputs by package (bytes in output)\n`);
    for (const [p, n] of packages) process.stdout.write(`  ${kb(n).padStart(10)}  ${p}\n`);
    process.stdout.write(`${b.name}: biggest input files\n`);
    for (const [f, n] of files) process.stdout.write(`  ${kb(n).padStart(10)}  ${f}\n`);
  }
} finally {
  if (values.keep) process.stdout.write(`\nbundles kept in ${dir}\n`);
  else rmSync(dir, { recursive: true, force: true });
}
