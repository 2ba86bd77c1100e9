/** Test helpers: synthesize a Kaj stack exactly as `cdk synth` would (same cdk.json context). */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { App, type CfnElement } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { expect, it } from 'vitest';
import type { KajConfigInput } from '../../infra/config.js';
import { KajStack, type KajStackProps } from '../../infra/kaj-stack.js';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The `context` of cdk.json: feature flags and `kaj:config`. */
export function cdkJsonContext(): Record<string, unknown> {
  const cdkJson = JSON.parse(readFileSync(path.join(REPO_ROOT, 'cdk.json'), 'utf8')) as {
    context: Record<string, unknown>;
  };
  return cdkJson.context;
}

export interface SynthesizedKaj {
  readonly app: App;
  readonly stack: KajStack;
  readonly template: Template;
  /** Resources of the synthesized template, by logical id. */
  readonly resources: Record<string, CfnResourceJson>;
  /** Logical id of a construct's CloudFormation resource. */
  logicalId(construct: IConstruct): string;
  /** Deletes the temporary cloud assembly. */
  dispose(): void;
}

export interface CfnResourceJson {
  readonly Type: string;
  readonly Properties: Record<string, any>;
  readonly DependsOn?: string | string[];
  readonly DeletionPolicy?: string;
  readonly UpdateReplacePolicy?: string;
}

/**
 * Builds and synthesizes a stack (bundling the functions with esbuild: a few seconds).
 * Call once per test file, in `beforeAll`.
 * @param props lanes, limits and task types @default those of `tasks/lanes.ts`, `tasks/limits.ts` and `tasks/index.ts`
 */
export function synthKaj(
  config?: KajConfigInput,
  extraContext: Record<string, unknown> = {},
  props: Pick<KajStackProps, 'lanes' | 'limits' | 'registry'> = {},
): SynthesizedKaj {
  const app = new App({ context: { ...cdkJsonContext(), ...extraContext } });
  const stack = new KajStack(app, 'KajTest', config === undefined ? props : { ...props, config });
  const template = Template.fromStack(stack);
  const resources = (template.toJSON() as { Resources: Record<string, CfnResourceJson> }).Resources;
  return {
    app,
    stack,
    template,
    resources,
    logicalId: (construct) => {
      const child = construct.node.defaultChild ?? construct;
      return stack.resolve((child as CfnElement).logicalId) as string;
    },
    dispose: () => rmSync(app.outdir, { recursive: true, force: true }),
  };
}

/** Whether `cfn-lint` is installed (pip install cfn-lint); CI has it. */
export const CFN_LINT_AVAILABLE = spawnSync('cfn-lint', ['--version'], { encoding: 'utf8' }).status === 0;

/**
 * Runs cfn-lint on each synthesized template and expects it clean. W3005 ("DependsOn already
 * enforced by GetAtt") is CDK's own: every Function DependsOn its role even though it also GetAtts
 * it. Nothing else is ignored.
 */
export function expectCfnLintClean(templates: readonly (readonly [string, SynthesizedKaj])[]): void {
  const dir = mkdtempSync(path.join(tmpdir(), 'kaj-cfn-lint-'));
  try {
    for (const [name, s] of templates) {
      const file = path.join(dir, `${name}.template.json`);
      writeFileSync(file, JSON.stringify(s.template.toJSON(), null, 1));
      const run = spawnSync('cfn-lint', ['--ignore-checks', 'W3005', '--', file], { encoding: 'utf8' });
      expect(run.status, `cfn-lint ${name}:\n${run.stdout}\n${run.stderr}`).toBe(0);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A test that the templates pass cfn-lint (synthesized by then: they are asked for when it runs). */
export function itPassesCfnLint(title: string, templates: () => readonly (readonly [string, SynthesizedKaj])[]): void {
  // biome-ignore lint/plugin/no-conditional-skip: needs cfn-lint (pip install cfn-lint); skipped only where it is not installed
  it.skipIf(!CFN_LINT_AVAILABLE)(title, () => expectCfnLintClean(templates()), 120_000);
}
