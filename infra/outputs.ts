/**
 * Stable CloudFormation output keys of the Kaj stack.
 *
 * The admin CLI reads a deployment by stack name (`DescribeStacks` → `Outputs`) and looks the
 * values up by these keys, so they are part of Kaj's public contract: never rename one.
 *
 * This file must stay free of `aws-cdk-lib` imports so that the CLI can import it cheaply.
 */
import { PRIORITIES, type Priority } from '../shared/config/resources.js';

export const OUTPUT_KEYS = {
  apiUrl: 'ApiUrl',
  tableName: 'TableName',
  queueUrl: { high: 'QueueUrlHigh', normal: 'QueueUrlNormal', low: 'QueueUrlLow' },
  queueArn: { high: 'QueueArnHigh', normal: 'QueueArnNormal', low: 'QueueArnLow' },
  dlqUrl: { high: 'DlqUrlHigh', normal: 'DlqUrlNormal', low: 'DlqUrlLow' },
  dlqArn: { high: 'DlqArnHigh', normal: 'DlqArnNormal', low: 'DlqArnLow' },
  alarmTopicArn: 'AlarmTopicArn',
  schedulesTableName: 'SchedulesTableName',
  schedulerFunctionName: 'SchedulerFunctionName',
  limitsTableName: 'LimitsTableName',
  historyTableName: 'HistoryTableName',
  producerConfig: 'ProducerConfig',
} as const satisfies {
  apiUrl: string;
  tableName: string;
  queueUrl: Record<Priority, string>;
  queueArn: Record<Priority, string>;
  dlqUrl: Record<Priority, string>;
  dlqArn: Record<Priority, string>;
  alarmTopicArn: string;
  schedulesTableName: string;
  schedulerFunctionName: string;
  limitsTableName: string;
  historyTableName: string;
  producerConfig: string;
};

/**
 * The output keys the admin CLI requires, in a stable order. The stack also emits
 * `OUTPUT_KEYS.alarmTopicArn`, `OUTPUT_KEYS.schedulesTableName`, `OUTPUT_KEYS.schedulerFunctionName`,
 * `OUTPUT_KEYS.limitsTableName`, `OUTPUT_KEYS.historyTableName` (only when a task type is a workflow) and
 * `OUTPUT_KEYS.producerConfig`; they are read when present but not required, so that the CLI still
 * reads stacks deployed before those outputs existed.
 */
export const ALL_OUTPUT_KEYS: readonly string[] = [
  OUTPUT_KEYS.apiUrl,
  OUTPUT_KEYS.tableName,
  ...PRIORITIES.flatMap((p) => [
    OUTPUT_KEYS.queueUrl[p],
    OUTPUT_KEYS.queueArn[p],
    OUTPUT_KEYS.dlqUrl[p],
    OUTPUT_KEYS.dlqArn[p],
  ]),
];

/** The deployment's resources as read back from the stack outputs. */
export interface KajStackOutputs {
  readonly apiUrl: string;
  readonly tableName: string;
  readonly queueUrls: Readonly<Record<Priority, string>>;
  readonly queueArns: Readonly<Record<Priority, string>>;
  readonly deadLetterQueueUrls: Readonly<Record<Priority, string>>;
  readonly deadLetterQueueArns: Readonly<Record<Priority, string>>;
  /** Absent on stacks deployed before the alarm topic was always created. */
  readonly alarmTopicArn?: string;
  /** Absent on stacks deployed before schedules existed. */
  readonly schedulesTableName?: string;
  /** Absent on stacks deployed before schedules existed. */
  readonly schedulerFunctionName?: string;
  /** Absent on stacks deployed before flow-control limits existed. */
  readonly limitsTableName?: string;
  /** Absent on stacks without workflows (the history table exists only with a workflow type). */
  readonly historyTableName?: string;
  /** The direct producers' configuration (JSON, `parseProducerConfig`); absent on stacks deployed before direct submit. */
  readonly producerConfig?: string;
}

/** Shape of `Stack.Outputs` in a CloudFormation `DescribeStacks` answer (SDK-agnostic). */
export interface StackOutputLike {
  readonly OutputKey?: string | undefined;
  readonly OutputValue?: string | undefined;
}

/**
 * Turns `DescribeStacks` outputs into {@link KajStackOutputs}.
 * @throws Error naming every missing key (e.g. the stack is not a Kaj stack, or is too old).
 */
export function parseStackOutputs(outputs: readonly StackOutputLike[], stackName = 'the stack'): KajStackOutputs {
  const values = new Map<string, string>();
  for (const o of outputs) {
    if (o.OutputKey !== undefined && o.OutputValue !== undefined) values.set(o.OutputKey, o.OutputValue);
  }
  const missing = ALL_OUTPUT_KEYS.filter((k) => !values.has(k));
  if (missing.length > 0) {
    throw new Error(`${stackName} has no output(s) ${missing.join(', ')}: is it a Kaj stack?`);
  }
  const get = (key: string): string => values.get(key) as string;
  const perPriority = (keys: Readonly<Record<Priority, string>>): Record<Priority, string> => ({
    high: get(keys.high),
    normal: get(keys.normal),
    low: get(keys.low),
  });
  return {
    apiUrl: get(OUTPUT_KEYS.apiUrl),
    tableName: get(OUTPUT_KEYS.tableName),
    queueUrls: perPriority(OUTPUT_KEYS.queueUrl),
    queueArns: perPriority(OUTPUT_KEYS.queueArn),
    deadLetterQueueUrls: perPriority(OUTPUT_KEYS.dlqUrl),
    deadLetterQueueArns: perPriority(OUTPUT_KEYS.dlqArn),
    ...(values.has(OUTPUT_KEYS.alarmTopicArn) ? { alarmTopicArn: get(OUTPUT_KEYS.alarmTopicArn) } : {}),
    ...(values.has(OUTPUT_KEYS.schedulesTableName) ? { schedulesTableName: get(OUTPUT_KEYS.schedulesTableName) } : {}),
    ...(values.has(OUTPUT_KEYS.schedulerFunctionName)
      ? { schedulerFunctionName: get(OUTPUT_KEYS.schedulerFunctionName) }
      : {}),
    ...(values.has(OUTPUT_KEYS.limitsTableName) ? { limitsTableName: get(OUTPUT_KEYS.limitsTableName) } : {}),
    ...(values.has(OUTPUT_KEYS.historyTableName) ? { historyTableName: get(OUTPUT_KEYS.historyTableName) } : {}),
    ...(values.has(OUTPUT_KEYS.producerConfig) ? { producerConfig: get(OUTPUT_KEYS.producerConfig) } : {}),
  };
}
