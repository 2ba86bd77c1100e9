/**
 * Kaj's import rules: no cycles, and the layers of docs/architecture.md ("Layer rules") as folder rules.
 *
 *   functions/ ─► shared/service/app/<function>.ts ─► shared/service/{api,consumer,sweeper} ─► domain
 *                                                  └─► shared/aws/ (adapters) ─────────────────► domain
 *   domain = shared/{errors.ts, config, runtime, retry, limit, task, schedule, workflow}, each port beside it.
 *   client/ and console/ sit beside cli/ and local/, outside shared/, and are built from it.
 *
 * `npm run deps` checks them. Type-only imports count (tsPreCompilationDeps: true): a layer that
 * names another layer's types depends on it as surely as one that calls it.
 *
 * @type {import('dependency-cruiser').IConfiguration}
 */

/** Where the code that ships lives: the Lambda bundles, the published client, the console the CLI serves. */
const SHIPPED = '^(functions|shared|tasks|client|console)/';
/** The domain: everything below the adapters (a new domain folder such as workflow/ is in it already). */
const DOMAIN = '^shared/(errors\\.ts$|config/|runtime/|retry/|limit/|task/|schedule/|workflow/)';
const ADAPTERS = '^shared/aws/';
const SERVICE = '^shared/service/';
/** The composition roots: the only modules of shared/ that wire adapters in. */
const ROOTS = ['^shared/service/app/', '^shared/service/all-in-one\\.ts$'];
const AWS_PACKAGES = [
  '(^|/)node_modules/@aws-sdk/',
  '(^|/)node_modules/@smithy/',
  '(^|/)node_modules/(@types/)?aws-lambda/',
];

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
      name: 'domain-imports-nothing-above-it',
      severity: 'error',
      comment:
        'The domain (task, schedule, limit, retry, runtime, config, errors.ts; workflow later) talks to the ' +
        'world through the ports beside it (task/task-store.ts, task/task-queue.ts, task/admission.ts, ' +
        'schedule/schedule-store.ts, limit/limit-store.ts): no AWS SDK, @smithy, Powertools or aws-lambda ' +
        '(not even types), no adapter, nothing of the Lambda side, the client or the console.',
      from: { path: DOMAIN },
      to: { path: [...AWS_PACKAGES, ADAPTERS, SERVICE, '^(client|console)/'] },
    },
    {
      name: 'domain-reaches-no-sdk',
      severity: 'error',
      comment: 'Nothing the domain imports may itself pull in the AWS SDK or an adapter, through any chain of imports.',
      from: { path: DOMAIN },
      to: { reachable: true, path: ['(^|/)node_modules/@aws-sdk/', ADAPTERS] },
    },
    {
      name: 'adapters-import-only-the-domain',
      severity: 'error',
      comment:
        'shared/aws/ implements the ports: it uses the domain and the SDK, never the Lambda side, the client ' +
        'or the console.',
      from: { path: ADAPTERS },
      to: { path: [SERVICE, '^(client|console)/'] },
    },
    {
      name: 'adapters-only-through-the-roots',
      severity: 'error',
      comment:
        'Inside shared/, only the composition roots (service/app/*, service/all-in-one.ts) build adapters; ' +
        'the roles get ports. (cli/, local/, tests and benches outside shared/ may build them too.)',
      from: { path: '^shared/', pathNot: [ADAPTERS, ...ROOTS] },
      to: { path: ADAPTERS },
    },
    {
      name: 'service-roles-stay-apart',
      severity: 'error',
      comment:
        "api, consumer and sweeper are separate Lambda functions: none imports another's role folder, nor " +
        "a root (that would put one function's code in another's bundle).",
      from: { path: '^shared/service/(api|consumer|sweeper|workflow)/' },
      to: {
        path: ['^shared/service/(api|consumer|sweeper|workflow)/', ...ROOTS],
        pathNot: '^shared/service/$1/',
      },
    },
    {
      name: 'claims-through-the-admission-port',
      severity: 'error',
      comment:
        'The claim depends on its own admissions port (shared/task/admission.ts), the limiter implements ' +
        'it: shared/task never imports the limiter or its parts.',
      from: { path: '^shared/task/' },
      to: { path: '^shared/limit/(limiter|rate|slots|refusals|permit|items)\\.ts$' },
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
      name: 'console-only-for-cli-and-local',
      severity: 'error',
      comment: 'The web console is served by `kaj ui` (cli/) and `npm start` (local/) only.',
      from: { pathNot: '^(console|cli|local|test|bench)/' },
      to: { path: '^console/' },
    },
    {
      name: 'client-is-published-not-shared',
      severity: 'error',
      comment: 'client/ is the published kaj/client: Kaj itself never imports it (tests and deploy scripts may).',
      from: { pathNot: '^(client|test|scripts|bench)/' },
      to: { path: '^client/' },
    },
    {
      name: 'tasks-only-task-api',
      severity: 'error',
      comment:
        'User task types see the task, workflow and pipeline APIs (shared/{task,workflow,pipeline}/define.ts) ' +
        'and each other, nothing else of Kaj.',
      from: { path: '^tasks/' },
      to: {
        path: '^(functions|shared|client|console|local|cli|infra|test|bench|scripts|bin)/',
        pathNot: '^shared/(task|workflow|pipeline)/define\\.ts$',
      },
    },
    {
      name: 'not-to-test',
      severity: 'error',
      comment:
        'Only tests import test/ (the helpers only tests use). Something outside test/ that needs one (a ' +
        'benchmark) needs it moved to testing/ first.',
      from: { pathNot: '^test/' },
      to: { path: '^test/' },
    },
    {
      name: 'testing-only-for-tests-and-benches',
      severity: 'error',
      comment:
        'testing/ holds what the tests and the benchmarks share: the contract-tested in-memory fakes of the ' +
        'ports, the fake clock and scripted randomness, the event factories, the worker-process harness. ' +
        'Only test/, bench/ and testing/ itself import it; Kaj itself (functions/, shared/, tasks/, ' +
        'client/, console/, cli/, local/, infra/, scripts/, bin/) never does, so no fake can end up in a ' +
        'Lambda bundle, the published client or the operator tools.',
      from: { pathNot: '^(test|bench|testing)/' },
      to: { path: '^testing/' },
    },
    {
      name: 'kaj-reaches-no-testing',
      severity: 'error',
      comment:
        'Nor through any chain of imports (Kaj importing a benchmark that imports testing/): the ' +
        'shipped code and the operator tools reach no fake.',
      from: { path: '^(functions|shared|tasks|client|console|cli|local|infra|scripts|bin)/' },
      to: { path: '^testing/', reachable: true },
    },
    {
      name: 'testing-not-to-test-or-bench',
      severity: 'error',
      comment:
        'testing/ is below the tests and the benchmarks that use it: it imports Kaj (shared/, local/) ' +
        'and itself, never test/ or bench/.',
      from: { path: '^testing/' },
      to: { path: '^(test|bench)/' },
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
