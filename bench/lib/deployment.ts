/**
 * What the cost and scheduler benchmarks need to know about a deployment, read at run time from
 * the CloudFormation template the CDK app synthesizes (esbuild bundling skipped, a couple of
 * seconds).
 *
 * - {@link readDeployment} (bench/cost.ts): the task table's key schema and its global secondary
 *   indexes with their projections, each function's memory and architecture, the SQS event source
 *   mappings' batch size, and the sweeper's schedule. When the stack cannot be synthesized (the
 *   infrastructure being edited, say), it falls back to `TABLE_SCHEMA` in shared/config/resources.ts:
 *   its outbox index with `projection` as declared there (ALL when absent, the projection before
 *   the write-path redesign), the construct default of 256 MiB for every function, three mappings
 *   of batch 10 and a sweep a minute. A template whose projection differs from TABLE_SCHEMA's is
 *   reported as a warning.
 * - {@link readSchedulerDeployment} (bench/schedules.ts): the schedules table's key schema and its
 *   `due` index with its projection, the task table (the runs' tasks are created there), the
 *   scheduler function's memory, architecture and timeout, and the tick's rule. It falls back to
 *   `SCHEDULE_TABLE_SCHEMA` / `TABLE_SCHEMA`, the construct's default of 256 MiB arm64 and a 55 s
 *   timeout, and `DEFAULTS.scheduleTickSeconds`.
 *
 * @module
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KajStack } from '../../infra/kaj-stack.js';
import { DEFAULTS, SCHEDULE_TABLE_SCHEMA, TABLE_SCHEMA } from '../../shared/config/resources.js';
import type { IndexModel, Projection, TableModel } from './dynamo-accounting.js';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface FunctionModel {
  readonly memoryMiB: number;
  readonly architecture: string;
}

export interface DeploymentModel {
  /** Where the figures come from. */
  readonly source: string;
  readonly table: TableModel;
  readonly functions: {
    readonly api: FunctionModel;
    readonly consumer: FunctionModel;
    readonly sweeper: FunctionModel;
  };
  /** SQS event source mappings (one per priority queue). */
  readonly mappings: { readonly count: number; readonly batchSize: number };
  /** Seconds between sweeper runs. */
  readonly sweepIntervalSeconds: number;
  /** Differences between the template and TABLE_SCHEMA worth a warning. */
  readonly warnings: readonly string[];
}

interface CfnResource {
  readonly Type: string;
  readonly Properties?: Record<string, any>;
}

const TEMPLATE_SOURCE = 'synthesized CloudFormation template (infra/kaj-stack.ts, cdk.json context)';

type Construct = { node: { defaultChild?: unknown } };

interface Template {
  readonly stack: KajStack;
  readonly resources: Record<string, CfnResource>;
  /** The properties of a construct's resource: `{}` when absent, or an error naming `what` if given. */
  props(construct: Construct, what?: string): Record<string, any>;
}

/** `read` over a freshly synthesized stack; `fallback` with the reason when it cannot be synthesized. */
async function fromTemplate<T>(read: (t: Template) => T, fallback: (why: string) => T): Promise<T> {
  const outdir = mkdtempSync(path.join(tmpdir(), 'kaj-bench-synth-'));
  try {
    // Loaded lazily: the CDK libraries are only needed here.
    const { App } = await import('aws-cdk-lib');
    const { KajStack } = await import('../../infra/kaj-stack.js');
    const cdk = JSON.parse(readFileSync(path.join(REPO_ROOT, 'cdk.json'), 'utf8')) as { context?: object };
    const app = new App({ outdir, context: { ...cdk.context, 'aws:cdk:bundling-stacks': [] } });
    const stack = new KajStack(app, 'KajBench');
    const template = app.synth().getStackByName(stack.stackName).template as {
      Resources: Record<string, CfnResource>;
    };
    const resources = template.Resources;
    const props = (construct: Construct, what?: string): Record<string, any> => {
      const p = resources[stack.getLogicalId(construct.node.defaultChild as never)]?.Properties;
      if (p === undefined && what !== undefined) throw new Error(`${what} not found in the template`);
      return p ?? {};
    };
    return read({ stack, resources, props });
  } catch (err) {
    return fallback(`synth failed: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`);
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}

const functionModel = (p: Record<string, any>): FunctionModel => ({
  memoryMiB: Number(p.MemorySize ?? 128),
  architecture: String(p.Architectures?.[0] ?? 'x86_64'),
});

/** Reads the deployment from a freshly synthesized stack; falls back to TABLE_SCHEMA (see the module doc). */
export function readDeployment(): Promise<DeploymentModel> {
  return fromTemplate(
    ({ stack, resources, props }) => {
      const table = tableModel(props(stack.taskTable.table, 'task table'));
      const mappings = Object.values(resources).filter((r) => r.Type === 'AWS::Lambda::EventSourceMapping');
      const batchSizes = mappings.map((m) => Number(m.Properties?.BatchSize ?? 10));
      return {
        source: TEMPLATE_SOURCE,
        table,
        functions: {
          api: functionModel(props(stack.api.handler)),
          consumer: functionModel(props(stack.consumer.handler)),
          sweeper: functionModel(props(stack.sweeper.handler)),
        },
        mappings: { count: mappings.length, batchSize: batchSizes.length > 0 ? Math.min(...batchSizes) : 10 },
        sweepIntervalSeconds: rateSeconds(String(props(stack.sweeper.rule).ScheduleExpression ?? 'rate(1 minute)')),
        warnings: compareWithSchema(table),
      };
    },
    (why) => schemaDeployment(`TABLE_SCHEMA (${why})`),
  );
}

/** The table model of an `AWS::DynamoDB::Table`'s properties. */
export function tableModel(props: Record<string, any>): TableModel {
  const keys = (schema: { AttributeName: string; KeyType: string }[] | undefined) => ({
    partitionKey: schema?.find((k) => k.KeyType === 'HASH')?.AttributeName,
    sortKey: schema?.find((k) => k.KeyType === 'RANGE')?.AttributeName,
  });
  const t = keys(props.KeySchema);
  if (t.partitionKey === undefined) throw new Error('the table has no partition key');
  const indexes: IndexModel[] = (props.GlobalSecondaryIndexes ?? []).map((g: any): IndexModel => {
    const k = keys(g.KeySchema);
    if (k.partitionKey === undefined) throw new Error(`index ${g.IndexName} has no partition key`);
    return {
      name: String(g.IndexName),
      partitionKey: k.partitionKey,
      ...(k.sortKey === undefined ? {} : { sortKey: k.sortKey }),
      projection: projectionOf(g.Projection),
    };
  });
  return { partitionKey: t.partitionKey, ...(t.sortKey === undefined ? {} : { sortKey: t.sortKey }), indexes };
}

function projectionOf(p: { ProjectionType?: string; NonKeyAttributes?: string[] } | undefined): Projection {
  const type = p?.ProjectionType ?? 'ALL';
  if (type === 'KEYS_ONLY') return { type: 'KEYS_ONLY' };
  if (type === 'INCLUDE') return { type: 'INCLUDE', nonKeyAttributes: p?.NonKeyAttributes ?? [] };
  return { type: 'ALL' };
}

/** `rate(1 minute)`, `rate(5 minutes)`, `rate(30 seconds)` → seconds (60 for anything else). */
export function rateSeconds(expression: string): number {
  const m = /^rate\((\d+) (second|minute|hour|day)s?\)$/.exec(expression.trim());
  if (m === null) return 60;
  const unit = { second: 1, minute: 60, hour: 3600, day: 86_400 }[m[2] as 'second' | 'minute' | 'hour' | 'day'];
  return Number(m[1]) * unit;
}

function compareWithSchema(table: TableModel): string[] {
  const warnings: string[] = [];
  const schema = TABLE_SCHEMA.outboxIndex;
  const index = table.indexes.find((i) => i.name === schema.name);
  if (index === undefined) warnings.push(`the template has no index "${schema.name}" (TABLE_SCHEMA.outboxIndex)`);
  else if (index.partitionKey !== schema.partitionKey || index.sortKey !== schema.sortKey) {
    warnings.push(`index "${schema.name}" keys differ between the template and TABLE_SCHEMA`);
  }
  const declared = (schema as { projection?: unknown }).projection;
  if (index !== undefined && typeof declared === 'string' && declared !== index.projection.type) {
    warnings.push(
      `index "${schema.name}": the template projects ${index.projection.type}, TABLE_SCHEMA says ${declared}`,
    );
  }
  if (table.partitionKey !== TABLE_SCHEMA.partitionKey) warnings.push('table partition key differs from TABLE_SCHEMA');
  return warnings;
}

/** The model from TABLE_SCHEMA alone (see the module doc), when no template can be had. */
export function schemaDeployment(source: string): DeploymentModel {
  const schema = TABLE_SCHEMA.outboxIndex as typeof TABLE_SCHEMA.outboxIndex & { projection?: unknown };
  const projection = schema.projection;
  const fromSchema: Projection = projection === 'KEYS_ONLY' ? { type: 'KEYS_ONLY' } : { type: 'ALL' };
  const fn: FunctionModel = { memoryMiB: 256, architecture: 'arm64' };
  return {
    source,
    table: {
      partitionKey: TABLE_SCHEMA.partitionKey,
      indexes: [
        { name: schema.name, partitionKey: schema.partitionKey, sortKey: schema.sortKey, projection: fromSchema },
        {
          name: TABLE_SCHEMA.listIndex.name,
          partitionKey: TABLE_SCHEMA.listIndex.partitionKey,
          sortKey: TABLE_SCHEMA.listIndex.sortKey,
          projection: { type: 'INCLUDE', nonKeyAttributes: [...TABLE_SCHEMA.listIndex.nonKeyAttributes] },
        },
      ],
    },
    functions: { api: fn, consumer: fn, sweeper: fn },
    mappings: { count: 3, batchSize: 10 },
    sweepIntervalSeconds: 60,
    warnings: [
      `projection ${fromSchema.type} ${projection === undefined ? 'assumed (not in TABLE_SCHEMA)' : 'from TABLE_SCHEMA'}`,
    ],
  };
}

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

/** The scheduler's deployment from a freshly synthesized stack; falls back to the schemas (see the module doc). */
export function readSchedulerDeployment(): Promise<SchedulerDeploymentModel> {
  return fromTemplate(
    ({ stack, props }) => {
      const schedulesTable = tableModel(props(stack.scheduleTable.table, 'schedules table'));
      const fn = props(stack.scheduler.handler, 'scheduler function');
      const tickRule = String(props(stack.scheduler.rule, 'tick rule').ScheduleExpression ?? 'rate(1 minute)');
      return {
        source: TEMPLATE_SOURCE,
        schedulesTable,
        taskTable: tableModel(props(stack.taskTable.table, 'task table')),
        scheduler: { ...functionModel(fn), timeoutSeconds: Number(fn.Timeout ?? 3) },
        tickSeconds: rateSeconds(tickRule),
        tickRule,
        warnings: compareWithScheduleSchema(schedulesTable),
      };
    },
    (why) => schedulerSchemaModel(`SCHEDULE_TABLE_SCHEMA (${why})`),
  );
}

function compareWithScheduleSchema(table: TableModel): string[] {
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

/** The scheduler's model from the schemas alone (see the module doc). */
export function schedulerSchemaModel(source: string): SchedulerDeploymentModel {
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
