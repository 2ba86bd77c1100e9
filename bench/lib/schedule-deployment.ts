/**
 * What the scheduler benchmark needs to know about a deployment, read from the CloudFormation
 * template the CDK app synthesizes (as `deployment.ts` does for the cost benchmark, with its
 * `tableModel` and `rateSeconds`): the schedules table's key schema and its `due` index with its
 * projection, the task table (the runs' tasks are created there), the scheduler function's memory,
 * architecture and timeout, and the tick's rule.
 *
 * Falls back to `SCHEDULE_TABLE_SCHEMA` / `TABLE_SCHEMA` (shared/config/resources.ts), the
 * construct's default of 256 MiB arm64 and a 55 s timeout, and `DEFAULTS.scheduleTickSeconds`,
 * when the stack cannot be synthesized.
 *
 * @module
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULTS, SCHEDULE_TABLE_SCHEMA } from '../../shared/config/resources.js';
import type { TableModel } from './dynamo-accounting.js';
import { type FunctionModel, rateSeconds, schemaDeployment, tableModel } from './deployment.js';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface SchedulerDeploymentModel {
  /** Where the figures come from. */
  readonly source: string;
  readonly schedulesTable: TableModel;
  readonly taskTable: TableModel;
  readonly scheduler: FunctionModel & { readonly timeoutSeconds: number };
  /** The tick rule's period, seconds. */
  readonly tickSeconds: number;
  /** The tick rule's expression as deployed. */
  readonly tickRule: string;
  /** Differences between the template and SCHEDULE_TABLE_SCHEMA worth a warning. */
  readonly warnings: readonly string[];
}

interface CfnResource {
  readonly Type: string;
  readonly Properties?: Record<string, any>;
}

/** Reads the deployment from a freshly synthesized stack; falls back to the schemas (see the module doc). */
export async function readSchedulerDeployment(): Promise<SchedulerDeploymentModel> {
  try {
    return await fromTemplate();
  } catch (err) {
    return schemaModel(
      `SCHEDULE_TABLE_SCHEMA (synth failed: ${err instanceof Error ? err.message.split('\n')[0] : String(err)})`,
    );
  }
}

async function fromTemplate(): Promise<SchedulerDeploymentModel> {
  const { App } = await import('aws-cdk-lib');
  const { KajStack } = await import('../../infra/kaj-stack.js');
  const context = (JSON.parse(readFileSync(path.join(REPO_ROOT, 'cdk.json'), 'utf8')) as { context?: object }).context;
  const outdir = mkdtempSync(path.join(tmpdir(), 'kaj-schedule-synth-'));
  try {
    const app = new App({ outdir, context: { ...context, 'aws:cdk:bundling-stacks': [] } });
    const stack = new KajStack(app, 'KajScheduleBench');
    const template = app.synth().getStackByName(stack.stackName).template as {
      Resources: Record<string, CfnResource>;
    };
    const resources = template.Resources;
    const logicalId = (construct: { node: { defaultChild?: unknown } }): string =>
      stack.getLogicalId(construct.node.defaultChild as never);
    const props = (construct: { node: { defaultChild?: unknown } }, what: string): Record<string, any> => {
      const p = resources[logicalId(construct)]?.Properties;
      if (p === undefined) throw new Error(`${what} not found in the template`);
      return p;
    };
    const schedulesTable = tableModel(props(stack.scheduleTable.table, 'schedules table'));
    const taskTable = tableModel(props(stack.taskTable.table, 'task table'));
    const fn = props(stack.scheduler.handler, 'scheduler function');
    const tickRule = String(props(stack.scheduler.rule, 'tick rule').ScheduleExpression ?? 'rate(1 minute)');
    return {
      source: 'synthesized CloudFormation template (infra/kaj-stack.ts, cdk.json context)',
      schedulesTable,
      taskTable,
      scheduler: {
        memoryMiB: Number(fn.MemorySize ?? 128),
        architecture: String(fn.Architectures?.[0] ?? 'x86_64'),
        timeoutSeconds: Number(fn.Timeout ?? 3),
      },
      tickSeconds: rateSeconds(tickRule),
      tickRule,
      warnings: compareWithSchema(schedulesTable),
    };
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}

function compareWithSchema(table: TableModel): string[] {
  const warnings: string[] = [];
  const due = SCHEDULE_TABLE_SCHEMA.dueIndex;
  const index = table.indexes.find((i) => i.name === due.name);
  if (index === undefined) warnings.push(`the template has no index "${due.name}" (SCHEDULE_TABLE_SCHEMA.dueIndex)`);
  else {
    if (index.partitionKey !== due.partitionKey || index.sortKey !== due.sortKey) {
      warnings.push(`index "${due.name}" keys differ between the template and SCHEDULE_TABLE_SCHEMA`);
    }
    if (index.projection.type !== due.projection) {
      warnings.push(
        `index "${due.name}": the template projects ${index.projection.type}, the schema ${due.projection}`,
      );
    }
  }
  if (table.partitionKey !== SCHEDULE_TABLE_SCHEMA.partitionKey) {
    warnings.push('schedules table partition key differs from SCHEDULE_TABLE_SCHEMA');
  }
  return warnings;
}

/** The model from the schemas alone (see the module doc). */
export function schemaModel(source: string): SchedulerDeploymentModel {
  const due = SCHEDULE_TABLE_SCHEMA.dueIndex;
  const tasks = schemaDeployment(source);
  return {
    source,
    schedulesTable: {
      partitionKey: SCHEDULE_TABLE_SCHEMA.partitionKey,
      indexes: [
        {
          name: due.name,
          partitionKey: due.partitionKey,
          sortKey: due.sortKey,
          projection: due.projection === 'KEYS_ONLY' ? { type: 'KEYS_ONLY' } : { type: 'ALL' },
        },
      ],
    },
    taskTable: tasks.table,
    scheduler: { memoryMiB: 256, architecture: 'arm64', timeoutSeconds: 55 },
    tickSeconds: DEFAULTS.scheduleTickSeconds,
    tickRule: `rate(${DEFAULTS.scheduleTickSeconds} seconds)`,
    warnings: [...tasks.warnings, 'scheduler function: the construct defaults assumed (256 MiB arm64, 55 s)'],
  };
}
