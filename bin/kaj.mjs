#!/usr/bin/env node
// Launcher for Kaj's admin CLI: registers tsx's ESM loader in-process (no child process, so
// signals and exit codes pass straight through), then runs cli/main.ts.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const { register } = await import('tsx/esm/api');
register();
await import(new URL('../cli/main.ts', import.meta.url).href);
