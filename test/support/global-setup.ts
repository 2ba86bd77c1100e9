/**
 * Once per test run, before any test file: bundles the worker that integration suites spawn
 * (`testing/worker-bundle.ts`) with the registries they load, and names it to every test worker
 * in `KAJ_WORKER_BUNDLE`; deletes it after the run.
 */
import { buildWorkerBundle, WORKER_BUNDLE_ENV } from '../../testing/worker-bundle.js';
import { WORKER_TASKS_MODULE } from '../../testing/harness.js';
import { LIMIT_TASKS_MODULE } from './flow-bench.js';
import { PIPELINE_TASKS_MODULE } from './pipeline-tasks.js';

export default async function setup(): Promise<() => Promise<void>> {
  const bundle = await buildWorkerBundle([WORKER_TASKS_MODULE, LIMIT_TASKS_MODULE, PIPELINE_TASKS_MODULE]);
  process.env[WORKER_BUNDLE_ENV] = bundle.dir;
  return async () => {
    delete process.env[WORKER_BUNDLE_ENV];
    await bundle.remove();
  };
}
