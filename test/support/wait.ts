/** Polling helpers, shared with the benchmarks' harness: bench/fixtures/wait.ts. */
export * from '../../bench/fixtures/wait.js';
