/**
 * The task table's outbox index: sparse, keys only by default, and `ALL` kept for
 * stacks deployed before (DynamoDB cannot change an existing index's projection).
 */
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { TaskTable } from '../../infra/constructs/task-table.js';
import { TABLE_SCHEMA } from '../../shared/config/resources.js';

function indexesOf(projection?: 'KEYS_ONLY' | 'ALL'): Record<string, unknown>[] {
  const stack = new Stack(new App(), 'TableTest');
  new TaskTable(stack, 'Tasks', {
    tableName: 'kaj-tasks',
    ...(projection === undefined ? {} : { outboxIndexProjection: projection }),
  });
  const tables = Template.fromStack(stack).findResources('AWS::DynamoDB::Table');
  const props = Object.values(tables)[0]?.Properties as { GlobalSecondaryIndexes: Record<string, unknown>[] };
  expect(props.GlobalSecondaryIndexes).toHaveLength(2);
  return props.GlobalSecondaryIndexes;
}

function indexOf(projection?: 'KEYS_ONLY' | 'ALL'): Record<string, unknown> {
  return indexesOf(projection)[0] as Record<string, unknown>;
}

describe('Construct: TaskTable', () => {
  it('has one outbox index on (outbox_pk, outbox_due), projecting keys only by default', () => {
    expect(indexOf()).toEqual({
      IndexName: TABLE_SCHEMA.outboxIndex.name,
      KeySchema: [
        { AttributeName: 'outbox_pk', KeyType: 'HASH' },
        { AttributeName: 'outbox_due', KeyType: 'RANGE' },
      ],
      Projection: { ProjectionType: 'KEYS_ONLY' },
    });
  });

  it("keeps an earlier stack's ALL projection when told (an index's projection cannot change in place)", () => {
    expect(indexOf('ALL')).toMatchObject({ Projection: { ProjectionType: 'ALL' } });
  });

  it('has the sparse listing index on (list_pk, list_sk), projecting the list row’s attributes only (no payload, result, history, lease)', () => {
    const list = indexesOf()[1] as { IndexName: string; Projection: { NonKeyAttributes: string[] } };
    expect(list).toMatchObject({
      IndexName: 'list',
      KeySchema: [
        { AttributeName: 'list_pk', KeyType: 'HASH' },
        { AttributeName: 'list_sk', KeyType: 'RANGE' },
      ],
      Projection: { ProjectionType: 'INCLUDE' },
    });
    for (const a of ['payload', 'result', 'history', 'lease_until', 'audit', 'dispatch_id', 'lease_token']) {
      expect(list.Projection.NonKeyAttributes).not.toContain(a);
    }
  });
});
