import type * as iam from 'aws-cdk-lib/aws-iam';
import type { Construct } from 'constructs';
import { HISTORY_TABLE_SCHEMA } from '../../shared/config/resources.js';
import { KajTable, type KajTableProps } from './kaj-table.js';

/**
 * What a consumer and the API function do to the history table (the API records signals and the
 * ends of children it cancels; the consumer a run's steps and its children's ends): reads a run's history (Query on the table, strongly
 * consistent), appends an entry (a PutItem conditioned on its key being free), and reads back the
 * entry that won a key where the endpoint does not return it with the failed condition (GetItem).
 * No UpdateItem, no DeleteItem: entries are immutable, and TTL removes them. No Scan.
 */
export const HISTORY_TABLE_APPEND_ACTIONS = ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:Query'] as const;

/**
 * The history table: the histories of workflow runs (`shared/workflow/history-store.ts`), one
 * partition per run (`HISTORY_TABLE_SCHEMA.partitionKey`, the workflow task's id) and one small
 * immutable item per recorded step, failed attempt or sleep, sorted by its key
 * (`HISTORY_TABLE_SCHEMA.sortKey`), so that a resume reads a run back in one Query. TTL on
 * `HISTORY_TABLE_SCHEMA.ttlAttribute` removes the entries of runs long finished.
 *
 * Kept like the other tables (kaj-table.ts: on-demand billing, point-in-time recovery, the AWS
 * managed key `aws/dynamodb`, the stack's `deletionProtection` and `retainData`): a running
 * workflow's history is the only record of the steps it has done, so losing it would run them
 * again.
 */
export class HistoryTable extends KajTable {
  constructor(scope: Construct, id: string, props: KajTableProps) {
    super(scope, id, {
      ...props,
      partitionKey: HISTORY_TABLE_SCHEMA.partitionKey,
      sortKey: HISTORY_TABLE_SCHEMA.sortKey,
      ttlAttribute: HISTORY_TABLE_SCHEMA.ttlAttribute,
    });
  }

  /** What a consumer or the API function does here ({@link HISTORY_TABLE_APPEND_ACTIONS}), statement `HistoryTableItems`. */
  public grantAppend(role: iam.IRole): void {
    this.grantItems(role, 'HistoryTableItems', HISTORY_TABLE_APPEND_ACTIONS);
  }
}
