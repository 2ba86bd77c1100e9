/**
 * CDK app entry: `npx cdk synth|deploy|destroy` (cdk.json → "app": "npx tsx infra/app.ts").
 *
 * Configuration comes from cdk.json → context → "kaj:config" and `-c kaj:<key>=<value>`
 * (see docs/deploy.md). The stack is environment-agnostic: it deploys to the account and
 * region of the credentials the CLI uses.
 */
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { resolveConfig } from './config.js';
import { InvalidConfigError } from './errors.js';
import { KajStack } from './kaj-stack.js';

const app = new App();
try {
  const config = resolveConfig(app.node);
  // The construct id is the stack name, so `cdk deploy <stackName>` selects it.
  new KajStack(app, config.stackName);
} catch (e) {
  if (!(e instanceof InvalidConfigError)) throw e;
  // A configuration mistake is not a crash: say what is wrong, without a stack trace.
  console.error(`\n${e.message}\nSee docs/deploy.md (Configuration) for every setting.\n`);
  process.exit(1);
}
// cdk-nag 3 is a policy-validation plugin: any unacknowledged finding (error or warning) fails synth.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
app.synth();
