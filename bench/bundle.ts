/**
 * Size and cold import time of each Lambda bundle, built as the stack builds it.
 *
 *   npm run bench:bundle -- [--runs 5] [--top 12] [--function api|consumer|sweeper|scheduler] [--keep]
 *
 *   npm run bench:bundle -- --runs 3 --top 0     # the table alone (the figures in docs/measured.md)
 *
 * Rows (the bundle of the first version, one all-in-one root on the DynamoDB document client for
 * every function, is measured in docs/measured.md, "Speed"): each function as the stack deploys it, with the esbuild
 * alias `@aws-sdk/credential-provider-node` → `shared/aws/lambda-credentials.ts` that
 * `infra/constructs/kaj-function.ts` passes as `esbuildArgs` (environment-only credentials); and
 * each function without that alias (`sdk-creds`: the SDK's default credential chain).
 *
 * For each function: esbuild with the options `infra/constructs/kaj-function.ts` gives
 * `NodejsFunction` (ESM, node22, minified, source map without sources content, main fields
 * module,main, the `require` banner, AWS SDK bundled: no externals), then
 * - the bytes of `index.mjs` (and of its source map),
 * - the cold import time: a fresh `node --enable-source-maps` process (as on Lambda, NODE_OPTIONS)
 *   times `await import(bundle)` with the function's environment set; median and minimum of
 *   `--runs` (≥ 5), the bundles interleaved; and the same without `--enable-source-maps`,
 * - the biggest inputs (esbuild metafile: bytes each contributes to the output), by package.
 *
 * Then the `zod/mini` question for the hot schemas (taskMessageSchema, submitRequestSchema): what
 * zod weighs in each bundle, which modules import it, and a minimal bundle + parse CPU of the
 * message schema written with `zod` and with `zod/mini`.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
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
async function bundle(entry: string, outfile: string, alias?: Record<string, string>): Promise<Metafile> {
  const result = await build({
    ...(alias === undefined ? {} : { alias }),
    // Entries written to a temporary directory still resolve the repository's packages.
    nodePaths: [join(REPO_ROOT, 'node_modules')],
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
const c0 = process.cpuUsage();
const t0 = performance.now();
await import(process.argv[1]);
const c = process.cpuUsage(c0);
process.stdout.write(String(performance.now() - t0) + ' ' + String((c.user + c.system) / 1000));
`;

/**
 * A fresh node process's `import(file)`: wall milliseconds (what a cold start waits) and CPU
 * milliseconds (the same work, but not inflated when other processes share the machine).
 */
function coldImport(file: string, env: Record<string, string>, sourceMaps = true): { wall: number; cpu: number } {
  const out = spawnSync(process.execPath, ['--input-type=module', '-e', IMPORT_TIMER, file], {
    env: { PATH: process.env.PATH ?? '', ...env, NODE_OPTIONS: sourceMaps ? '--enable-source-maps' : '' },
    encoding: 'utf8',
  });
  if (out.status !== 0) throw new Error(`importing ${file} failed: ${out.stderr}`);
  const [wall, cpu] = out.stdout.trim().split(' ').map(Number);
  return { wall: wall ?? Number.NaN, cpu: cpu ?? Number.NaN };
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

/** Modules of the bundle that import `zod` (or a path in it) themselves. */
function zodImporters(meta: Metafile): string[] {
  return Object.entries(meta.inputs)
    .filter(
      ([path, i]) => !path.includes('node_modules/zod/') && i.imports.some((x) => /node_modules\/zod\//.test(x.path)),
    )
    .map(([path]) => path)
    .sort();
}

function zodBytes(meta: Metafile): number {
  let n = 0;
  for (const out of Object.values(meta.outputs)) {
    for (const [input, { bytesInOutput }] of Object.entries(out.inputs)) {
      if (input.includes('node_modules/zod/')) n += bytesInOutput;
    }
  }
  return n;
}

interface Row {
  readonly name: string;
  readonly bytes: number;
  readonly map: number;
  /** Cold imports with --enable-source-maps (as deployed), and without. */
  readonly withMaps: { wall: number; cpu: number }[];
  readonly withoutMaps: { wall: number; cpu: number }[];
}

const dir = mkdtempSync(join(tmpdir(), 'kaj-bundle-'));
const env = lambdaEnvironment();
const rows: Row[] = [];
const metas = new Map<string, Metafile>();

const built: { name: string; outfile: string }[] = [];

/** Bundles an entry (its import is timed later, interleaved with the other bundles'). */
async function add(name: string, entry: string, alias?: Record<string, string>): Promise<void> {
  const outfile = join(dir, name.replace(/[^\w-]+/g, '_'), 'index.mjs');
  metas.set(name, await bundle(entry, outfile, alias));
  built.push({ name, outfile });
}

try {
  for (const name of NAMES) await add(name, join(REPO_ROOT, FUNCTION_ENTRIES[name]), ENV_CREDENTIALS_ALIAS);
  for (const name of NAMES) await add(`${name} sdk-creds`, join(REPO_ROOT, FUNCTION_ENTRIES[name]));

  // Round-robin over the bundles, so that whatever else the machine does weighs on all alike.
  for (const b of built) coldImport(b.outfile, env); // warm the OS file cache, as a deployed image is
  const runs = new Map<string, Pick<Row, 'withMaps' | 'withoutMaps'>>(
    built.map((b) => [b.name, { withMaps: [], withoutMaps: [] }]),
  );
  for (let r = 0; r < RUNS; r++) {
    for (const b of built) {
      runs.get(b.name)?.withMaps.push(coldImport(b.outfile, env));
      runs.get(b.name)?.withoutMaps.push(coldImport(b.outfile, env, false));
    }
  }
  for (const b of built) {
    rows.push({
      name: b.name,
      bytes: statSync(b.outfile).size,
      map: statSync(`${b.outfile}.map`).size,
      withMaps: runs.get(b.name)?.withMaps ?? [],
      withoutMaps: runs.get(b.name)?.withoutMaps ?? [],
    });
  }

  process.stdout.write(
    `\nBundles (esbuild ${(await import('esbuild')).version}, KajFunction options), node ${process.version}\n` +
      `Cold import of each bundle in a fresh node, ${RUNS} runs, bundles interleaved: median (minimum) wall ms,\n` +
      `with --enable-source-maps (as deployed) and without. On a shared machine the minimum is the least disturbed run.\n`,
  );
  process.stdout.write(
    `${'function'.padEnd(20)} ${'index.mjs'.padStart(10)} ${'.map'.padStart(10)} ${'source maps'.padStart(16)} ${'no source maps'.padStart(16)}\n`,
  );
  const ms = (xs: { wall: number; cpu: number }[]) =>
    `${median(xs.map((x) => x.wall)).toFixed(1)} (${Math.min(...xs.map((x) => x.wall)).toFixed(1)})`;
  for (const r of rows) {
    process.stdout.write(
      `${r.name.padEnd(20)} ${kb(r.bytes).padStart(10)} ${kb(r.map).padStart(10)} ${ms(r.withMaps).padStart(16)} ${ms(r.withoutMaps).padStart(16)}\n`,
    );
  }

  for (const name of NAMES) {
    const meta = metas.get(name);
    if (meta === undefined) continue;
    const { packages, files } = biggest(meta, TOP);
    process.stdout.write(`\n${name}: biggest inputs by package (bytes in output)\n`);
    for (const [p, n] of packages) process.stdout.write(`  ${kb(n).padStart(10)}  ${p}\n`);
    process.stdout.write(`${name}: biggest input files\n`);
    for (const [f, n] of files) process.stdout.write(`  ${kb(n).padStart(10)}  ${f}\n`);
  }

  await zodMini(new Map(NAMES.flatMap((n) => (metas.has(n) ? [[n, metas.get(n) as Metafile]] : []))));
} finally {
  if (values.keep) process.stdout.write(`\nbundles kept in ${dir}\n`);
  else rmSync(dir, { recursive: true, force: true });
}

/**
 * Would `zod/mini` for the hot schemas pay? Reports what zod weighs in each bundle and who
 * imports it (if other modules keep importing classic zod, the bundle cannot shrink), then a
 * like-for-like minimal bundle and parse cost of the message schema in both flavours.
 */
async function zodMini(metas: Map<string, Metafile>): Promise<void> {
  process.stdout.write('\nzod in the bundles\n');
  for (const [name, meta] of metas) {
    process.stdout.write(
      `  ${name.padEnd(10)} ${kb(zodBytes(meta)).padStart(10)}  imported by: ${zodImporters(meta).join(', ')}\n`,
    );
  }
  const classic = `import * as z from 'zod';
export const taskMessageSchema = z.object({
  task_id: z.string().min(1).max(128),
  dispatch_id: z.string().min(1).max(128),
  timeout_seconds: z.number().int().positive().optional(),
  sent_at: z.number().int().nonnegative().optional(),
});`;
  const mini = `import * as z from 'zod/mini';
export const taskMessageSchema = z.object({
  task_id: z.string().check(z.minLength(1), z.maxLength(128)),
  dispatch_id: z.string().check(z.minLength(1), z.maxLength(128)),
  timeout_seconds: z.optional(z.int().check(z.positive())),
  sent_at: z.optional(z.int().check(z.nonnegative())),
});`;
  const parseLoop = `
const body = { task_id: 't_0123456789abcdef0123456789abcdef', dispatch_id: 'd_0123456789abcdef', timeout_seconds: 60 };
const N = 200000;
for (let i = 0; i < 20000; i++) taskMessageSchema.safeParse(body);
const results = [];
for (let r = 0; r < 5; r++) {
  const c0 = process.cpuUsage();
  for (let i = 0; i < N; i++) if (!taskMessageSchema.safeParse(body).success) throw new Error('bad');
  const c = process.cpuUsage(c0);
  results.push(((c.user + c.system) * 1000) / N);
}
results.sort((a, b) => a - b);
process.stdout.write(String(results[2]));`;
  const zdir = join(dir, 'zod');
  mkdirSync(zdir, { recursive: true });
  const out: Record<string, { bytes: number; importMs: number; parseNs: number }> = {};
  // Both in one bundle: a function whose task types keep classic zod while the hot schema moves to mini.
  const both = `${classic}\nimport * as zm from 'zod/mini';
export const miniSchema = zm.object({ task_id: zm.string().check(zm.minLength(1), zm.maxLength(128)) });
if (!miniSchema.safeParse({ task_id: 't' }).success) throw new Error('bad');`;
  for (const [flavour, source] of Object.entries({ zod: classic, 'zod/mini': mini, 'zod + mini': both })) {
    const base = join(zdir, flavour.replace(/[^\w]+/g, '-'));
    writeFileSync(`${base}-schema.ts`, `${source}\n`);
    writeFileSync(`${base}-parse.ts`, `${source}\n${parseLoop}\n`);
    await bundle(`${base}-schema.ts`, `${base}-schema.mjs`);
    await bundle(`${base}-parse.ts`, `${base}-parse.mjs`);
    const imports = Array.from({ length: RUNS }, () => coldImport(`${base}-schema.mjs`, env).wall);
    const parse = spawnSync(process.execPath, [`${base}-parse.mjs`], { encoding: 'utf8' });
    if (parse.status !== 0) throw new Error(parse.stderr);
    out[flavour] = {
      bytes: statSync(`${base}-schema.mjs`).size,
      importMs: median(imports),
      parseNs: Number(parse.stdout),
    };
  }
  process.stdout.write('taskMessageSchema alone, bundled and minified as above\n');
  for (const [flavour, r] of Object.entries(out)) {
    process.stdout.write(
      `  ${flavour.padEnd(11)} ${kb(r.bytes).padStart(10)}  import ${r.importMs.toFixed(1)} ms (median of ${RUNS})  safeParse ${r.parseNs.toFixed(0)} ns/message (median of 5 × 200k)\n`,
    );
  }
  const classicBytes = out.zod?.bytes ?? 0;
  const miniBytes = out['zod/mini']?.bytes ?? 0;
  const bothBytes = out['zod + mini']?.bytes ?? 0;
  process.stdout.write(
    `  → a function that keeps classic zod elsewhere (its task types) grows by ${kb(bothBytes - classicBytes)} if its hot schemas move to mini;\n` +
      `    one whose only zod user is the hot schema (the sweeper: shared/task/message.ts) shrinks by about ${kb(classicBytes - miniBytes)}.\n`,
  );
  // The source of the schemas, for the record: the bench must not drift from them silently.
  const message = readFileSync(join(REPO_ROOT, 'shared/task/message.ts'), 'utf8');
  if (!message.includes('task_id: z.string().min(1).max(128)')) {
    process.stdout.write('  note: shared/task/message.ts changed; the schema above may no longer match it\n');
  }
}
