import { RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import { Construct } from 'constructs';
import { TABLE_SCHEMA } from '../../shared/config/resources.js';

export interface TaskTableProps {
  /** Table name, from `resourceNames(stackName).table`. */
  readonly tableName: string;
  /**
   * DynamoDB deletion protection: the table can't be deleted by any API call until it is turned off.
   * @default true
   */
  readonly deletionProtection?: boolean;
  /**
   * What happens to the table (and every task in it) when the stack is deleted.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * What the outbox GSI projects. Keys only: the sweeper reads each due item itself, and an
   * entry costs one write unit whatever the item's size. Stacks deployed before keys-only keep
   * `'ALL'`: DynamoDB cannot change the projection of an existing index (docs/deploy.md).
   * @default 'KEYS_ONLY'
   */
  readonly outboxIndexProjection?: 'KEYS_ONLY' | 'ALL';
}

/**
 * The task table: one item per task, keyed by `TABLE_SCHEMA.partitionKey`, on-demand billing,
 * point-in-time recovery, TTL on finished tasks, and the sparse `outbox` GSI the sweeper queries.
 *
 * Encryption uses the AWS managed key `aws/dynamodb` rather than the default AWS owned key: no key
 * to manage and no monthly key fee either, but every use of the key shows in the account's
 * CloudTrail and the key is visible in KMS (DynamoDB caches table keys, so KMS request charges are
 * negligible). A customer managed key would cost $1/month at rest and is not needed here.
 *
 * The GSI is sparse and keys only: an item is in it only while something for it waits in the table
 * (a delay beyond SQS's 15 minutes, a failed send, a dead letter owed — a task sent at once never
 * enters it), and the sweeper reads each due item itself before acting, so nothing but the keys is
 * needed there. An entry then costs one write unit in and one out, whatever the item's size.
 */
export class TaskTable extends Construct {
  public readonly table: dynamodb.Table;
  /** ARN of the outbox GSI (for a Query grant scoped to that index only). */
  public readonly outboxIndexArn: string;
  /** ARN of the listing GSI (`GET /api/v1/tasks?status=…`): the API's Query grant is scoped to it. */
  public readonly listIndexArn: string;

  constructor(scope: Construct, id: string, props: TaskTableProps) {
    super(scope, id);
    this.table = new dynamodb.Table(this, 'Table', {
      tableName: props.tableName,
      partitionKey: { name: TABLE_SCHEMA.partitionKey, type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      timeToLiveAttribute: TABLE_SCHEMA.ttlAttribute,
      encryption: dynamodb.TableEncryption.AWS_MANAGED,
      deletionProtection: props.deletionProtection ?? true,
      removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
    });
    this.table.addGlobalSecondaryIndex({
      indexName: TABLE_SCHEMA.outboxIndex.name,
      partitionKey: { name: TABLE_SCHEMA.outboxIndex.partitionKey, type: dynamodb.AttributeType.STRING },
      sortKey: { name: TABLE_SCHEMA.outboxIndex.sortKey, type: dynamodb.AttributeType.NUMBER },
      projectionType:
        (props.outboxIndexProjection ?? TABLE_SCHEMA.outboxIndex.projection) === 'ALL'
          ? dynamodb.ProjectionType.ALL
          : dynamodb.ProjectionType.KEYS_ONLY,
    });
    this.outboxIndexArn = `${this.table.tableArn}/index/${TABLE_SCHEMA.outboxIndex.name}`;
    const list = TABLE_SCHEMA.listIndex;
    this.table.addGlobalSecondaryIndex({
      indexName: list.name,
      partitionKey: { name: list.partitionKey, type: dynamodb.AttributeType.STRING },
      sortKey: { name: list.sortKey, type: dynamodb.AttributeType.STRING },
      projectionType: dynamodb.ProjectionType.INCLUDE,
      nonKeyAttributes: [...list.nonKeyAttributes],
    });
    this.listIndexArn = `${this.table.tableArn}/index/${list.name}`;
  }
}
