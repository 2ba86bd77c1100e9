import type * as iam from 'aws-cdk-lib/aws-iam';
import type { Construct } from 'constructs';
import { LIMIT_TABLE_SCHEMA } from '../../shared/config/resources.js';
import { KajTable, type KajTableProps } from './kaj-table.js';

/**
 * What a consumer does to the limits table: reads an item, creates it, and changes it with
 * conditional updates (take or renew a lease, release it, advance a GCRA time, pause a rate).
 * No Scan, no Query, no DeleteItem: TTL removes the items of keyed limits nobody uses any more.
 */
export const LIMIT_TABLE_CONSUMER_ACTIONS = ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'] as const;

/**
 * The limits table: the shared state of the flow-control limits (`tasks/limits.ts`), one small
 * item per limit and per key of a keyed limit (leases of a concurrency limit, the GCRA time and any
 * provider pause of a rate), keyed by `LIMIT_TABLE_SCHEMA.partitionKey`. Every consumer of every
 * lane reads and writes the same items with conditional updates: that is what makes a limit hold
 * across all of them. TTL on `LIMIT_TABLE_SCHEMA.ttlAttribute` removes keyed items unused for a day.
 *
 * Kept like the other tables (kaj-table.ts: on-demand billing, point-in-time recovery, the AWS
 * managed key `aws/dynamodb`, the stack's `deletionProtection` and `retainData`). Its state is
 * short-lived, but the table holds a few small items, so PITR costs cents, and one rule for every
 * Kaj table is easier to audit than exceptions.
 */
export class LimitTable extends KajTable {
  constructor(scope: Construct, id: string, props: KajTableProps) {
    super(scope, id, {
      ...props,
      partitionKey: LIMIT_TABLE_SCHEMA.partitionKey,
      ttlAttribute: LIMIT_TABLE_SCHEMA.ttlAttribute,
    });
  }

  /** What a consumer does here ({@link LIMIT_TABLE_CONSUMER_ACTIONS}), statement `LimitTableItems`. */
  public grantConsumer(role: iam.IRole): void {
    this.grantItems(role, 'LimitTableItems', LIMIT_TABLE_CONSUMER_ACTIONS);
  }
}
