import { RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as iam from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import { allow } from './grants.js';

export interface KajTableProps {
  /** Table name, from `resourceNames(stackName)`. */
  readonly tableName: string;
  /**
   * DynamoDB deletion protection: the table can't be deleted by any API call until it is turned off.
   * @default true
   */
  readonly deletionProtection?: boolean;
  /**
   * What happens to the table (and everything in it) when the stack is deleted.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
}

/** What differs between the Kaj tables' keys: the partition key, the sort key and the TTL attribute if any. */
export interface KajTableKey {
  readonly partitionKey: string;
  /** A string sort key. @default - none */
  readonly sortKey?: string;
  /** @default - no TTL */
  readonly ttlAttribute?: string;
}

/**
 * What every Kaj table is, and the grants on it: on-demand billing, point-in-time recovery, a
 * string partition key (and a string sort key where the table has one), deletion protection and retention unless told otherwise (the stack passes
 * `deletionProtection` and `retainData` to every table alike).
 *
 * Encryption uses the AWS managed key `aws/dynamodb` rather than the default AWS owned key: no key
 * to manage and no monthly key fee either, but every use of the key shows in the account's
 * CloudTrail and the key is visible in KMS (DynamoDB caches table keys, so KMS request charges are
 * negligible). A customer managed key would cost $1/month at rest and is not needed here.
 *
 * A function's access is granted statement by statement, each with its Sid ({@link grantItems} and
 * the subclasses' grants): exactly the actions it uses, on the table or on one index.
 */
export abstract class KajTable extends Construct {
  public readonly table: dynamodb.Table;

  protected constructor(scope: Construct, id: string, props: KajTableProps & KajTableKey) {
    super(scope, id);
    this.table = new dynamodb.Table(this, 'Table', {
      tableName: props.tableName,
      partitionKey: { name: props.partitionKey, type: dynamodb.AttributeType.STRING },
      ...(props.sortKey !== undefined ? { sortKey: { name: props.sortKey, type: dynamodb.AttributeType.STRING } } : {}),
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      ...(props.ttlAttribute !== undefined ? { timeToLiveAttribute: props.ttlAttribute } : {}),
      encryption: dynamodb.TableEncryption.AWS_MANAGED,
      deletionProtection: props.deletionProtection ?? true,
      removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
    });
  }

  /** Lets `role` do `actions` on the table's items, as one statement `sid` (no index). */
  public grantItems(role: iam.IRole, sid: string, actions: readonly string[]): void {
    allow(role, sid, actions, [this.table.tableArn]);
  }

  /** Lets `role` Query these indexes of the table (not the table itself), as one statement `sid`. */
  protected grantIndexQuery(role: iam.IRole, sid: string, indexArns: readonly string[]): void {
    allow(role, sid, ['dynamodb:Query'], indexArns);
  }

  /** The ARN of the table's index `indexName` (for a grant scoped to that index). */
  protected indexArn(indexName: string): string {
    return `${this.table.tableArn}/index/${indexName}`;
  }
}
