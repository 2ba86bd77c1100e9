/** The reliability suite's harness lives beside the soak that shares it: bench/fixtures/harness.ts. */
export * from '../../../bench/fixtures/harness.js';
