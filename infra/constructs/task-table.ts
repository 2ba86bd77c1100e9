import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as iam from 'aws-cdk-lib/aws-iam';
import type { Construct } from 'constructs';
import { TABLE_SCHEMA } from '../../shared/config/resources.js';
import { KajTable, type KajTableProps } from './kaj-table.js';

export interface TaskTableProps extends KajTableProps {
  /**
   * What the outbox GSI projects. Keys only: the sweeper reads each due item itself, and an
   * entry costs one write unit whatever the item's size. Stacks deployed before keys-only keep
   * `'ALL'`: DynamoDB cannot change the projection of an existing index (docs/deploy.md).
   * @default 'KEYS_ONLY'
   */
  readonly outboxIndexProjection?: 'KEYS_ONLY' | 'ALL';
}

/**
 * The task table: one item per task, keyed by `TABLE_SCHEMA.partitionKey`, TTL on finished tasks,
 * the sparse `outbox` GSI the sweeper queries and the listing GSI; billing, recovery, encryption
 * and retention as every Kaj table (kaj-table.ts).
 *
 * The outbox GSI is sparse and keys only: an item is in it only while something for it waits in
 * the table (a delay beyond SQS's 15 minutes, a failed send, a dead letter owed — a task sent at
 * once never enters it), and the sweeper reads each due item itself before acting, so nothing but
 * the keys is needed there. An entry then costs one write unit in and one out, whatever the item's
 * size.
 */
export class TaskTable extends KajTable {
  /** ARN of the outbox GSI (for a Query grant scoped to that index only). */
  public readonly outboxIndexArn: string;
  /** ARN of the listing GSI (`GET /api/v1/tasks?status=…`): the API's Query grant is scoped to it. */
  public readonly listIndexArn: string;

  constructor(scope: Construct, id: string, props: TaskTableProps) {
    super(scope, id, { ...props, partitionKey: TABLE_SCHEMA.partitionKey, ttlAttribute: TABLE_SCHEMA.ttlAttribute });
    this.table.addGlobalSecondaryIndex({
      indexName: TABLE_SCHEMA.outboxIndex.name,
      partitionKey: { name: TABLE_SCHEMA.outboxIndex.partitionKey, type: dynamodb.AttributeType.STRING },
      sortKey: { name: TABLE_SCHEMA.outboxIndex.sortKey, type: dynamodb.AttributeType.NUMBER },
      projectionType:
        (props.outboxIndexProjection ?? TABLE_SCHEMA.outboxIndex.projection) === 'ALL'
          ? dynamodb.ProjectionType.ALL
          : dynamodb.ProjectionType.KEYS_ONLY,
    });
    this.outboxIndexArn = this.indexArn(TABLE_SCHEMA.outboxIndex.name);
    const list = TABLE_SCHEMA.listIndex;
    this.table.addGlobalSecondaryIndex({
      indexName: list.name,
      partitionKey: { name: list.partitionKey, type: dynamodb.AttributeType.STRING },
      sortKey: { name: list.sortKey, type: dynamodb.AttributeType.STRING },
      projectionType: dynamodb.ProjectionType.INCLUDE,
      nonKeyAttributes: [...list.nonKeyAttributes],
    });
    this.listIndexArn = this.indexArn(list.name);
  }

  /** Query on the outbox index (the sweeper's due entries), statement `QueryOutbox`. */
  public grantOutboxQuery(role: iam.IRole): void {
    this.grantIndexQuery(role, 'QueryOutbox', [this.outboxIndexArn]);
  }

  /**
   * What the listing (`GET /api/v1/tasks?status=…`) reads: Query on the listing index (`retrying`,
   * `failed`, `cancelled`, `running`) and the outbox index (`delayed`), statement `TaskListingQuery`,
   * and BatchGetItem on the table, statement `TaskListingRows` (a delayed row is read from its item:
   * the outbox index projects keys only).
   */
  public grantListing(role: iam.IRole): void {
    this.grantIndexQuery(role, 'TaskListingQuery', [this.listIndexArn, this.outboxIndexArn]);
    this.grantItems(role, 'TaskListingRows', ['dynamodb:BatchGetItem']);
  }
}
