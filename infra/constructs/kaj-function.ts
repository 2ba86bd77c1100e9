import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Duration, RemovalPolicy } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import { ApplicationLogLevel, Architecture, LoggingFormat, Runtime, SystemLogLevel } from 'aws-cdk-lib/aws-lambda';
import { LogLevel as EsbuildLogLevel, NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { ENV, FUNCTION_ENTRIES } from '../../shared/config/resources.js';
import { LOG_LEVELS, type LogLevel } from '../../shared/service/observability.js';

/** Repository root (this file is infra/constructs/kaj-function.ts). */
export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * Lambda runtime of every Kaj function. Node.js 22 (LTS): nodejs20.x is deprecated by Lambda.
 * nodejs24.x exists but the project develops and tests on Node 20/22, so 22 is the newest runtime
 * whose behaviour the test suite actually exercises (cdk-nag L1 is suppressed for this reason).
 */
export const LAMBDA_RUNTIME = Runtime.NODEJS_22_X;

/**
 * esbuild's ESM output has no `require`; some CommonJS dependencies bundled into an ESM file
 * still call it (e.g. for Node built-ins), so give them one.
 */
const ESM_REQUIRE_SHIM =
  "import { createRequire as __kajCreateRequire } from 'node:module';" +
  'const require = __kajCreateRequire(import.meta.url);';

/**
 * Lambda's application log level for a Kaj log level. Lambda gives a line without a `level` the
 * level INFO — every EMF metric line — so the filter never goes above INFO, or the metrics (and
 * the alarms on them) would vanish; the functions' logger drops WARN/ERROR-filtered lines itself
 * (shared/service/observability.ts), before formatting them. DEBUG and TRACE pass through.
 */
export function applicationLogLevelOf(level: LogLevel): ApplicationLogLevel {
  if (level === 'TRACE') return ApplicationLogLevel.TRACE;
  if (level === 'DEBUG') return ApplicationLogLevel.DEBUG;
  return ApplicationLogLevel.INFO;
}

export interface KajFunctionProps {
  /** Which handler to bundle (key of `FUNCTION_ENTRIES`). */
  readonly entryName: keyof typeof FUNCTION_ENTRIES;
  /** One-line purpose, shown in the console. */
  readonly description: string;
  /** Function timeout. */
  readonly timeout: Duration;
  /**
   * Memory in MiB.
   * @default 256
   */
  readonly memorySize?: number;
  /**
   * Instruction set. The bundle is plain JavaScript, so either runs the same code.
   * @default Architecture.ARM_64 - Graviton, ~20% cheaper per GB-s
   */
  readonly architecture?: Architecture;
  /** Environment variables (NODE_OPTIONS is added). */
  readonly environment: Readonly<Record<string, string>>;
  /** Retention of the function's log group. */
  readonly logRetention: logs.RetentionDays;
  /**
   * Level of Lambda's own log lines. START, END and REPORT are INFO events: WARN drops them.
   * @default SystemLogLevel.WARN - they cost ~250 bytes per invocation and mostly repeat Lambda's
   * metrics (Duration, Errors); REPORT's "Max Memory Used" is the exception: use INFO while sizing memory
   */
  readonly systemLogLevel?: SystemLogLevel;
}

/**
 * A Kaj Lambda function. Sets, in one place, the defaults every Kaj function shares:
 * Node.js 22 on arm64 unless told otherwise (Graviton: ~20% cheaper per GB-s), an ESM bundle built locally by esbuild
 * (minified, with source maps and `NODE_OPTIONS=--enable-source-maps`, AWS SDK bundled so the
 * deployed SDK is the one the tests ran against), its own log group with a retention, JSON log
 * format with Lambda's level filters (application: {@link applicationLogLevelOf} the
 * `POWERTOOLS_LOG_LEVEL` of its environment; system: WARN), and its own role that can only write
 * to that log group until permissions are granted explicitly (no `AWSLambdaBasicExecutionRole`
 * managed policy, no `logs:CreateLogGroup`).
 */
export class KajFunction extends NodejsFunction {
  /** The function's log group (`logGroup` is Function's own read-only accessor). */
  public readonly functionLogGroup: logs.LogGroup;
  /** The execution role; grant through it (or through the function) explicitly. */
  public readonly executionRole: iam.Role;

  constructor(scope: Construct, id: string, props: KajFunctionProps) {
    // Created beside the function (not inside it): a subclass can't create children before super().
    const logGroup = new logs.LogGroup(scope, `${id}LogGroup`, {
      retention: props.logRetention,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const role = new iam.Role(scope, `${id}Role`, {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `Execution role of the Kaj ${props.entryName} function`,
    });
    logGroup.grantWrite(role);

    super(scope, id, {
      entry: path.join(REPO_ROOT, FUNCTION_ENTRIES[props.entryName]),
      handler: 'handler',
      projectRoot: REPO_ROOT,
      depsLockFilePath: path.join(REPO_ROOT, 'package-lock.json'),
      runtime: LAMBDA_RUNTIME,
      architecture: props.architecture ?? Architecture.ARM_64,
      description: props.description,
      timeout: props.timeout,
      memorySize: props.memorySize ?? 256,
      role,
      logGroup,
      // JSON: Lambda filters by level (the functions' lines are JSON with a `level` already).
      loggingFormat: LoggingFormat.JSON,
      applicationLogLevelV2: applicationLogLevelOf(logLevelIn(props.environment)),
      systemLogLevelV2: props.systemLogLevel ?? SystemLogLevel.WARN,
      environment: { ...props.environment, NODE_OPTIONS: '--enable-source-maps' },
      bundling: {
        minify: true,
        sourceMap: true,
        sourcesContent: false,
        format: OutputFormat.ESM,
        target: 'node22',
        mainFields: ['module', 'main'],
        banner: ESM_REQUIRE_SHIM,
        bundleAwsSDK: true,
        // On Lambda credentials are always in the environment: the SDK's default chain (STS,
        // SSO, IMDS, ini files) is swapped for an environment-only provider, 133 KB less per
        // bundle (docs/measured.md, "Speed").
        esbuildArgs: { '--alias': `@aws-sdk/credential-provider-node=${LAMBDA_CREDENTIALS_MODULE}` },
        forceDockerBundling: false,
        logLevel: EsbuildLogLevel.WARNING,
      },
    });
    this.functionLogGroup = logGroup;
    this.executionRole = role;
  }
}

/** The environment-only credential provider the bundles use in place of the SDK's default chain. */
export const LAMBDA_CREDENTIALS_MODULE = path.join(REPO_ROOT, 'shared/aws/lambda-credentials.ts');

/** The Kaj log level an environment sets (`POWERTOOLS_LOG_LEVEL`); INFO when unset or unknown. */
function logLevelIn(environment: Readonly<Record<string, string>>): LogLevel {
  const v = environment[ENV.logLevel]?.toUpperCase();
  return (LOG_LEVELS as readonly string[]).includes(v ?? '') ? (v as LogLevel) : 'INFO';
}
