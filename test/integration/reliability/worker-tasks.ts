/** The worker task types live beside the soak that shares them: bench/fixtures/worker-tasks.ts. */
export * from '../../../bench/fixtures/worker-tasks.js';
