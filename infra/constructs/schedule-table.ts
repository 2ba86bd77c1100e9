import { RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import { Construct } from 'constructs';
import { SCHEDULE_TABLE_SCHEMA } from '../../shared/config/resources.js';

/** The index projection for each value `SCHEDULE_TABLE_SCHEMA.dueIndex.projection` may take. */
const PROJECTION_TYPES: Readonly<Record<'ALL' | 'KEYS_ONLY', dynamodb.ProjectionType>> = {
  ALL: dynamodb.ProjectionType.ALL,
  KEYS_ONLY: dynamodb.ProjectionType.KEYS_ONLY,
};

export interface ScheduleTableProps {
  /** Table name, from `resourceNames(stackName).schedules`. */
  readonly tableName: string;
  /**
   * DynamoDB deletion protection: the table can't be deleted by any API call until it is turned off.
   * @default true
   */
  readonly deletionProtection?: boolean;
  /**
   * What happens to the table (and every schedule in it) when the stack is deleted.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
}

/**
 * The schedules table: one item per schedule, keyed by `SCHEDULE_TABLE_SCHEMA.partitionKey`,
 * on-demand billing, point-in-time recovery, and the sparse `due` GSI the scheduler's tick queries.
 * No TTL: a schedule lives until it is deleted.
 *
 * Kept like the task table (the stack passes it the same `deletionProtection` and removal policy,
 * `retainData`): schedules made through the API exist nowhere else, and a mistaken `cdk destroy`
 * must not lose them.
 *
 * Encrypted with the AWS managed key `aws/dynamodb`, like the task table (task-table.ts says why
 * that rather than the AWS owned key or a customer managed one).
 *
 * The GSI is sparse: a schedule is in it only while the tick has something to do for it
 * (`due_pk` / `due_at` set), so a paused or finished schedule costs the tick nothing. It projects
 * what `SCHEDULE_TABLE_SCHEMA.dueIndex.projection` says, keys only: the tick reads each due
 * schedule itself (consistently, to act on its latest version), and an entry then costs one write
 * unit whatever the schedule's size each time `due_at` moves. DynamoDB cannot change an existing
 * index's projection: changing that constant after a deploy needs a new index.
 */
export class ScheduleTable extends Construct {
  public readonly table: dynamodb.Table;
  /** ARN of the `due` GSI (for a Query grant scoped to that index only). */
  public readonly dueIndexArn: string;

  constructor(scope: Construct, id: string, props: ScheduleTableProps) {
    super(scope, id);
    this.table = new dynamodb.Table(this, 'Table', {
      tableName: props.tableName,
      partitionKey: { name: SCHEDULE_TABLE_SCHEMA.partitionKey, type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: dynamodb.TableEncryption.AWS_MANAGED,
      deletionProtection: props.deletionProtection ?? true,
      removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
    });
    const due = SCHEDULE_TABLE_SCHEMA.dueIndex;
    this.table.addGlobalSecondaryIndex({
      indexName: due.name,
      partitionKey: { name: due.partitionKey, type: dynamodb.AttributeType.STRING },
      sortKey: { name: due.sortKey, type: dynamodb.AttributeType.NUMBER },
      projectionType: PROJECTION_TYPES[due.projection],
    });
    this.dueIndexArn = `${this.table.tableArn}/index/${due.name}`;
  }
}
