import { RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import { Construct } from 'constructs';
import { LIMIT_TABLE_SCHEMA } from '../../shared/config/resources.js';

/**
 * What a consumer does to the limits table: reads an item, creates it, and changes it with
 * conditional updates (take or renew a lease, release it, advance a GCRA time, pause a rate).
 * No Scan, no Query, no DeleteItem: TTL removes the items of keyed limits nobody uses any more.
 */
export const LIMIT_TABLE_CONSUMER_ACTIONS = ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'] as const;

export interface LimitTableProps {
  /** Table name, from `resourceNames(stackName).limits`. */
  readonly tableName: string;
  /**
   * DynamoDB deletion protection: the table can't be deleted by any API call until it is turned off.
   * @default true
   */
  readonly deletionProtection?: boolean;
  /**
   * What happens to the table when the stack is deleted.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
}

/**
 * The limits table: the shared state of the flow-control limits (`tasks/limits.ts`), one small
 * item per limit and per key of a keyed limit (leases of a concurrency limit, the GCRA time and any
 * provider pause of a rate), keyed by `LIMIT_TABLE_SCHEMA.partitionKey`. Every consumer of every
 * lane reads and writes the same items with conditional updates: that is what makes a limit hold
 * across all of them. On-demand billing; TTL on `LIMIT_TABLE_SCHEMA.ttlAttribute` removes keyed
 * items unused for a day.
 *
 * Kept like the other tables (the stack passes it the same `deletionProtection` and removal
 * policy, `retainData`), with point-in-time recovery and the AWS managed key `aws/dynamodb`
 * (task-table.ts says why that key). Its state is short-lived, but the table holds a few small
 * items, so PITR costs cents, and one rule for every Kaj table is easier to audit than exceptions.
 */
export class LimitTable extends Construct {
  public readonly table: dynamodb.Table;

  constructor(scope: Construct, id: string, props: LimitTableProps) {
    super(scope, id);
    this.table = new dynamodb.Table(this, 'Table', {
      tableName: props.tableName,
      partitionKey: { name: LIMIT_TABLE_SCHEMA.partitionKey, type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      timeToLiveAttribute: LIMIT_TABLE_SCHEMA.ttlAttribute,
      encryption: dynamodb.TableEncryption.AWS_MANAGED,
      deletionProtection: props.deletionProtection ?? true,
      removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
    });
  }
}
