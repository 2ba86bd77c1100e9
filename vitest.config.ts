import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Integration files start their own emulators; two workers match the two cores.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // CI asks for a JSON report too, to print one plain summary line.
    reporters: process.env.KAJ_VITEST_JSON ? ['default', ['json', { outputFile: process.env.KAJ_VITEST_JSON }]] : ['default'],
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
  },
});
