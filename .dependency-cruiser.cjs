/**
 * Kaj's import rules: no cycles, and the layering the architecture promises.
 *
 *   functions/ ─► shared/service/app/<function>.ts (+ observability, config, tasks/index.ts) ─► shared/* adapters ─► shared/task (domain)
 *
 * `npm run deps` checks them. Type-only imports count (tsPreCompilationDeps: true): a layer that
 * names another layer's types depends on it as surely as one that calls it.
 *
 * @type {import('dependency-cruiser').IConfiguration}
 */

/** Where the code that ships lives: the Lambda bundles, the published client, the console the CLI serves. */
const SHIPPED = '^(functions|shared|tasks|client|console)/';

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment:
        'A module that (indirectly) imports itself: initialisation order becomes load-order dependent ' +
        'and the layers stop being layers. Break the cycle (move the shared piece down a layer). ' +
        'Type-only cycles count too: harmless at run time, but the same layering smell.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'task-domain-is-pure',
      severity: 'error',
      comment:
        'shared/task is the domain core: no AWS SDK, no Lambda (not even its types), no Powertools, ' +
        'no DynamoDB/SQS adapter. It talks to the world through the ports in shared/task/task-store.ts ' +
        'and shared/task/task-queue.ts.',
      from: { path: '^shared/task/' },
      to: {
        path: [
          '(^|/)node_modules/@aws-sdk/',
          '(^|/)node_modules/@smithy/',
          '(^|/)node_modules/@aws-lambda-powertools/',
          '(^|/)node_modules/(@types/)?aws-lambda/',
          '^shared/aws/dynamo-',
          '^shared/aws/sqs-',
          '^shared/service/all-in-one\\.ts$',
          '^shared/service/app/',
          '^shared/service/observability\\.ts$',
        ],
      },
    },
    {
      name: 'task-domain-reaches-no-sdk',
      severity: 'error',
      comment:
        'Nothing shared/task imports may itself pull in the AWS SDK or an adapter (directly or ' +
        'through any chain of imports).',
      from: { path: '^shared/task/' },
      to: {
        reachable: true,
        path: ['(^|/)node_modules/@aws-sdk/', '^shared/aws/dynamo-', '^shared/aws/sqs-'],
      },
    },
    {
      name: 'claims-through-the-admission-port',
      severity: 'error',
      comment:
        'The claim depends on its own admissions port (shared/task/admission.ts), the limiter implements ' +
        'it: shared/task never imports shared/limit/limiter.ts.',
      from: { path: '^shared/task/' },
      to: { path: '^shared/limit/limiter\\.ts$' },
    },
    {
      name: 'functions-only-through-app',
      severity: 'error',
      comment:
        'Lambda entry points stay thin: they wire their composition root (shared/service/app/<function>.ts) to ' +
        'the event, with the configuration, observability and the task registry. Anything else goes ' +
        'through a root. Not shared/service/all-in-one.ts: that all-in-one root (local runtime, CLI, tests) would put ' +
        "every function's code in every bundle.",
      from: { path: '^functions/' },
      to: {
        path: '^(functions|shared|client|console|tasks|local|cli|infra|test|bench|scripts|bin)/',
        pathNot: [
          '^shared/service/app/[^/]+\\.ts$',
          '^shared/service/observability\\.ts$',
          '^shared/config/[^/]+\\.ts$',
          '^tasks/index\\.ts$',
        ],
      },
    },
    {
      name: 'functions-no-runtime-packages',
      severity: 'error',
      comment:
        'functions/ imports no npm package at run time (types from aws-lambda are fine): the SDK ' +
        'clients and Powertools are built in shared/.',
      from: { path: '^functions/' },
      to: {
        dependencyTypes: ['npm', 'npm-dev', 'npm-optional', 'npm-peer', 'npm-no-pkg', 'npm-unknown'],
        dependencyTypesNot: ['type-only'],
      },
    },
    {
      name: 'shared-not-to-outer-layers',
      severity: 'error',
      comment:
        'shared/ is what the functions, the local runtime and the CLI are built from; it never imports ' +
        'them, the infrastructure, the tests or the benchmarks.',
      from: { path: '^shared/' },
      to: { path: '^(functions|client|console|local|cli|infra|test|bench|scripts|bin)/' },
    },
    {
      name: 'client-and-console-not-to-outer-layers',
      severity: 'error',
      comment:
        'client/ (the published kaj/client) and console/ (the web console, served by cli/ and local/) ' +
        'are built from shared/; they never import the functions, the CLI, the local runtime, the ' +
        'infrastructure, the tests or the benchmarks, and the client never imports the console.',
      from: { path: '^(client|console)/' },
      to: { path: '^(functions|local|cli|infra|test|bench|scripts|bin)/' },
    },
    {
      name: 'client-not-to-console',
      severity: 'error',
      comment: 'The published client carries no part of the web console.',
      from: { path: '^client/' },
      to: { path: '^console/' },
    },
    {
      name: 'tasks-only-task-api',
      severity: 'error',
      comment: 'User task types see the task API (shared/task/define.ts) and each other, nothing else of Kaj.',
      from: { path: '^tasks/' },
      to: {
        path: '^(functions|shared|client|console|local|cli|infra|test|bench|scripts|bin)/',
        pathNot: '^shared/task/define\\.ts$',
      },
    },
    {
      name: 'not-to-test',
      severity: 'error',
      comment:
        'Only tests import test/ (helpers, fakes, harnesses). Something outside test/ that needs a test ' +
        'helper needs it moved out of test/ first.',
      from: { pathNot: '^test/' },
      to: { path: '^test/' },
    },
    {
      name: 'shipped-code-no-dev-deps',
      severity: 'error',
      comment:
        'Code bundled into the Lambdas uses only "dependencies" at run time (type-only imports of ' +
        'devDependencies such as @types/aws-lambda are fine: they vanish at compile time).',
      from: { path: SHIPPED },
      to: { dependencyTypes: ['npm-dev'], dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'no-non-package-json',
      severity: 'error',
      comment: 'An npm package not declared in package.json works by accident (hoisting) until it does not.',
      from: {},
      to: { dependencyTypes: ['npm-no-pkg', 'npm-unknown'] },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      comment: 'An import that resolves to nothing on disk.',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: ['node_modules'] },
    exclude: { path: ['(^|/)cdk\\.out/', '(^|/)\\.kaj/', '(^|/)\\.tmp/', '^coverage/'] },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    moduleSystems: ['es6', 'cjs'],
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.mts', '.cts', '.js', '.mjs', '.cjs', '.d.ts', '.json'],
      mainFields: ['module', 'main', 'types', 'typings'],
    },
    skipAnalysisNotInRules: true,
    reporterOptions: {
      text: { highlightFocused: true },
    },
  },
};
