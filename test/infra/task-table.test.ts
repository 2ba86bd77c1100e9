/**
 * The task table's outbox index (issue 10): sparse, keys only by default, and `ALL` kept for
 * stacks deployed before (DynamoDB cannot change an existing index's projection).
 */
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { TaskTable } from '../../infra/constructs/task-table.js';
import { TABLE_SCHEMA } from '../../shared/config/resources.js';

function indexOf(projection?: 'KEYS_ONLY' | 'ALL'): Record<string, unknown> {
  const stack = new Stack(new App(), 'TableTest');
  new TaskTable(stack, 'Tasks', {
    tableName: 'kaj-tasks',
    ...(projection === undefined ? {} : { outboxIndexProjection: projection }),
  });
  const tables = Template.fromStack(stack).findResources('AWS::DynamoDB::Table');
  const props = Object.values(tables)[0]?.Properties as { GlobalSecondaryIndexes: Record<string, unknown>[] };
  expect(props.GlobalSecondaryIndexes).toHaveLength(1);
  return props.GlobalSecondaryIndexes[0] as Record<string, unknown>;
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
});
