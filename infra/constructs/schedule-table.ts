import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as iam from 'aws-cdk-lib/aws-iam';
import type { Construct } from 'constructs';
import { SCHEDULE_TABLE_SCHEMA } from '../../shared/config/resources.js';
import { KajTable, type KajTableProps } from './kaj-table.js';

/** The index projection for each value `SCHEDULE_TABLE_SCHEMA.dueIndex.projection` may take. */
const PROJECTION_TYPES: Readonly<Record<'ALL' | 'KEYS_ONLY', dynamodb.ProjectionType>> = {
  ALL: dynamodb.ProjectionType.ALL,
  KEYS_ONLY: dynamodb.ProjectionType.KEYS_ONLY,
};

/**
 * The schedules table: one item per schedule, keyed by `SCHEDULE_TABLE_SCHEMA.partitionKey`, and
 * the sparse `due` GSI the scheduler's tick queries; billing, recovery, encryption and retention as
 * every Kaj table (kaj-table.ts). No TTL: a schedule lives until it is deleted.
 *
 * Kept like the task table (the stack passes it the same `deletionProtection` and removal policy,
 * `retainData`): schedules made through the API exist nowhere else, and a mistaken `cdk destroy`
 * must not lose them.
 *
 * The GSI is sparse: a schedule is in it only while the tick has something to do for it
 * (`due_pk` / `due_at` set), so a paused or finished schedule costs the tick nothing. It projects
 * what `SCHEDULE_TABLE_SCHEMA.dueIndex.projection` says, keys only: the tick reads each due
 * schedule itself (consistently, to act on its latest version), and an entry then costs one write
 * unit whatever the schedule's size each time `due_at` moves. DynamoDB cannot change an existing
 * index's projection: changing that constant after a deploy needs a new index.
 */
export class ScheduleTable extends KajTable {
  /** ARN of the `due` GSI (for a Query grant scoped to that index only). */
  public readonly dueIndexArn: string;

  constructor(scope: Construct, id: string, props: KajTableProps) {
    super(scope, id, { ...props, partitionKey: SCHEDULE_TABLE_SCHEMA.partitionKey });
    const due = SCHEDULE_TABLE_SCHEMA.dueIndex;
    this.table.addGlobalSecondaryIndex({
      indexName: due.name,
      partitionKey: { name: due.partitionKey, type: dynamodb.AttributeType.STRING },
      sortKey: { name: due.sortKey, type: dynamodb.AttributeType.NUMBER },
      projectionType: PROJECTION_TYPES[due.projection],
    });
    this.dueIndexArn = this.indexArn(due.name);
  }

  /** Query on the `due` index (the scheduler's tick), statement `QueryDue`. */
  public grantDueQuery(role: iam.IRole): void {
    this.grantIndexQuery(role, 'QueryDue', [this.dueIndexArn]);
  }
}
