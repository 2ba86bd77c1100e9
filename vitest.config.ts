import { existsSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The order test files start in: the suites that spawn worker processes and wait out leases and
 * visibility timeouts (test/integration/reliability/, test/integration/flow-control/) first, then
 * the other integration, infrastructure and contract suites (the contract suites run on the
 * emulators too), then the unit tests, each group in
 * vitest's own order (the last run's durations, else the larger file first). Longest first keeps
 * one long file from starting last while the other workers have nothing left to run.
 */
const GROUPS = [/^test\/integration\/(reliability|flow-control)\//, /^test\/(integration|infra|contract)\//];

/** The index of the first of GROUPS that holds `spec`'s file (the rest: one past the last). */
function group(spec: TestSpecification): number {
  const path = spec.moduleId.slice(spec.project.config.root.length + 1);
  const i = GROUPS.findIndex((g) => g.test(path));
  return i === -1 ? GROUPS.length : i;
}

class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    // Array.prototype.sort is stable: vitest's order holds within each group — except in the
    // first, where a suite split over two targets (`x.test.ts` and `x.moto.test.ts`, both a few
    // lines running `x.cases.ts`) is as large as its cases: the largest first.
    return (await super.sort(files)).sort(
      (a, b) => group(a) - group(b) || (group(a) === 0 ? weight(b) - weight(a) : 0),
    );
  }
}

/** A file's size, with the cases it runs when it is one half of a split suite. */
function weight(spec: TestSpecification): number {
  const file = spec.moduleId;
  const cases = file.replace(/(\.moto)?\.test\.ts$/, '.cases.ts');
  return statSync(file).size + (cases !== file && existsSync(cases) ? statSync(cases).size : 0);
}

export default defineConfig({
  test: {
    // Two projects, run side by side on the same workers. The unit and infrastructure tests share
    // their module graph within a worker (`isolate: false`: each file is not given fresh imports of
    // shared/, zod, the SDK and aws-cdk-lib, which was most of their time); they start no emulator
    // and leave no state behind (fake timers, stubbed environment variables and spies restored by
    // each file). The rest (integration and contract suites on the emulators) start and stop
    // processes, servers and environment variables: each file in a fresh module graph.
    projects: [
      {
        extends: true,
        test: { name: 'in-process', include: ['test/unit/**/*.test.ts', 'test/infra/**/*.test.ts'], isolate: false },
      },
      {
        extends: true,
        test: {
          name: 'emulators',
          include: ['test/**/*.test.ts'],
          exclude: ['test/unit/**', 'test/infra/**'],
          // Bundles the worker the integration suites spawn, once (testing/worker-bundle.ts).
          globalSetup: ['test/support/global-setup.ts'],
        },
      },
    ],
    // What a file stubs with vi.stubEnv is put back after it, so no file sees another's.
    unstubEnvs: true,
    sequence: { sequencer: LongestFirstSequencer },
    // One file more than the cores: the integration files spend most of their time waiting out
    // leases and visibility timeouts (on 2 cores, 3 files at once keep the CPU about 90% busy).
    maxWorkers: Number(process.env.KAJ_TEST_WORKERS ?? availableParallelism() + 1),
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // expect.poll waits on a state (a GSI caught up, a page updated), not on a speed: its own
    // default of 1 s is what one request can take on a loaded machine.
    expect: { poll: { timeout: 20_000 } },
    // CI asks for a JSON report too, to print one plain summary line.
    reporters: process.env.KAJ_VITEST_JSON
      ? ['default', ['json', { outputFile: process.env.KAJ_VITEST_JSON }]]
      : ['default'],
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    // Collected only with `--coverage` (`npm run test:guarded`); a plain `vitest run` pays nothing.
    // Scope: shared/ (the domain and its adapters), client/ and console/; files no test loads count as 0%.
    coverage: {
      provider: 'v8',
      include: ['shared/**/*.ts', 'client/**/*.ts', 'console/**/*.ts'],
      // The include globs also match by suffix: `console/**` would take in cli/console/ without this.
      exclude: ['cli/**'],
      reporter: ['text-summary', 'json-summary'],
      reportsDirectory: '.tmp/coverage',
      // Just below `vitest run test/unit --coverage` on 2026-12-01 (statements 88.1, branches 83.3,
      // functions 86.3, lines 89.7; shared/task 92.9 / 86.2 / 97.4 / 95.7). The full suite only adds.
      thresholds: {
        statements: 86,
        branches: 81,
        functions: 84,
        lines: 88,
        'shared/task/**': { statements: 91, branches: 84, functions: 95, lines: 94 },
      },
    },
  },
});
