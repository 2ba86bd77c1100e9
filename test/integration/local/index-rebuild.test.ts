/**
 * A SIGKILL between dynalite's separate LevelDB writes of an item and of its
 * index entries leaves the saved outbox GSI out of step with the items. The local runtime
 * rebuilds the indexes from the items at start, before anything reads the table.
 *
 * The torn writes are made deterministic by writing the store directly, exactly as dynalite's
 * `updateIndexes` (delete old entries, put new ones, then put the item) leaves it when the
 * process dies in between:
 * - PutItem of a new task killed after the index put: an entry for an item that does not exist;
 * - UpdateItem moving a task's outbox due time killed after the index writes: the entry for the
 *   old due time (which the item still has) is gone, and one for the new due time is there;
 * - an entry holding another copy of the item than the projection makes of it (with a
 *   projection beyond the keys, an UpdateItem that keeps the index key leaves such a copy).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBDocumentClient, QueryCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import { startLocalRuntime, type LocalRuntime } from '../../../local/runtime.js';
import { TABLE_SCHEMA } from '../../../shared/config/resources.js';
import { outboxPartitions, type TaskRecord } from '../../../shared/task/model.js';
import { openSavedIndex, type Stored } from '../../support/dynalite-store.js';

const PREFIX = 'kaj-rebuild';
const TABLE = `${PREFIX}-tasks`;
const INDEX = TABLE_SCHEMA.outboxIndex.name;

let dir: string | undefined;
let runtime: LocalRuntime | undefined;

afterEach(async () => {
  await runtime?.stop(1_000);
  runtime = undefined;
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/** The runtime on the saved store, doing nothing by itself (no consumers, no sweeps while the test looks). */
function open(dataDir: string): Promise<LocalRuntime> {
  return startLocalRuntime({ dataDir, prefix: PREFIX, port: 0, consumers: false, sweepIntervalMs: 3_600_000 });
}

/** Every entry of the outbox GSI, through DynamoDB Query (what the sweeper reads). */
async function indexEntries(
  rt: LocalRuntime,
): Promise<Array<Pick<TaskRecord, 'task_id' | 'outbox_pk' | 'outbox_due'>>> {
  const doc = DynamoDBDocumentClient.from(rt.clients.dynamodb);
  const out: Array<Pick<TaskRecord, 'task_id' | 'outbox_pk' | 'outbox_due'>> = [];
  for (const partition of outboxPartitions()) {
    {
      const page = await doc.send(
        new QueryCommand({
          TableName: TABLE,
          IndexName: INDEX,
          KeyConditionExpression: '#pk = :pk',
          ExpressionAttributeNames: { '#pk': TABLE_SCHEMA.outboxIndex.partitionKey },
          ExpressionAttributeValues: { ':pk': partition },
        }),
      );
      for (const i of (page.Items ?? []) as TaskRecord[])
        out.push({ task_id: i.task_id, outbox_pk: i.outbox_pk, outbox_due: i.outbox_due });
    }
  }
  return out.sort((a, b) => a.task_id.localeCompare(b.task_id));
}

/** What the items say the outbox GSI holds: every item with an outbox entry. */
async function itemsWithOutbox(
  rt: LocalRuntime,
): Promise<Array<Pick<TaskRecord, 'task_id' | 'outbox_pk' | 'outbox_due'>>> {
  const doc = DynamoDBDocumentClient.from(rt.clients.dynamodb);
  const page = await doc.send(new ScanCommand({ TableName: TABLE, ConsistentRead: true }));
  return ((page.Items ?? []) as TaskRecord[])
    .filter((i) => i.outbox_pk !== undefined)
    .map((i) => ({ task_id: i.task_id, outbox_pk: i.outbox_pk, outbox_due: i.outbox_due }))
    .sort((a, b) => a.task_id.localeCompare(b.task_id));
}

describe('the saved outbox index after torn writes', () => {
  it('a restart rebuilds it from the items: no phantom entry, none missing, no stale copy', async () => {
    dir = mkdtempSync(join(tmpdir(), 'kaj-index-'));
    runtime = await open(dir);
    const ids: string[] = [];
    for (let i = 0; i < 4; i += 1) {
      const { record } = await runtime.kaj.submitter.submit(
        // An hour away: beyond SQS's delay, so each waits in the outbox index.
        { type: 'send_email', payload: { to: 'ada@example.com', subject: `s${i}` }, delay_seconds: 3600 },
        { owner: 'local' },
      );
      ids.push(record.task_id);
    }
    const before = await indexEntries(runtime);
    expect(before.map((e) => e.task_id)).toEqual([...ids].sort());
    await runtime.stop(1_000);
    runtime = undefined;

    // Tear the store as a SIGKILL between dynalite's writes would.
    const [moved, stale] = [...ids].sort() as [string, string];
    const db = await openSavedIndex(dir, TABLE, INDEX);
    const entryOf = (id: string) => db.entryOf('task_id', id);
    // 1. PutItem of a task that never got its item: an entry for a task that does not exist.
    const ghost: Stored = { ...entryOf(moved)[1], task_id: { S: 't_ghost00000000000000000000000000' } };
    await db.put(ghost);
    // 2. UpdateItem moving `moved`'s due time: old entry deleted, new one put, item not written.
    const [oldKey, oldValue] = entryOf(moved);
    const due = { N: String(Number(oldValue.outbox_due?.N) + 3_600_000) };
    const movedOn: Stored = { ...oldValue, outbox_due: due };
    await db.del(oldKey);
    await db.put(movedOn);
    // 3. An entry holding more than the projection (keys only) allows: a copy that is not the item's.
    const [staleKey, staleValue] = entryOf(stale);
    await db.putAt(staleKey, { ...staleValue, status: { S: 'running' } });
    await db.close();

    runtime = await open(dir);
    const after = await indexEntries(runtime);
    expect(after).toEqual(await itemsWithOutbox(runtime));
    expect(after.map((e) => e.task_id)).toEqual([...ids].sort());
    expect(runtime.indexRebuild).toMatchObject({ removed: 2, added: 1, rewritten: 1 });
  });

  it('an intact store is left as it is', async () => {
    dir = mkdtempSync(join(tmpdir(), 'kaj-index-'));
    runtime = await open(dir);
    await runtime.kaj.submitter.submit(
      { type: 'send_email', payload: { to: 'ada@example.com', subject: 'x' }, delay_seconds: 3600 },
      { owner: 'local' },
    );
    await runtime.stop(1_000);
    runtime = await open(dir);
    // Two tables with an index: the tasks' outbox and the schedules' due index (the schedules
    // declared in code — tasks/sales-report.ts, tasks/nightly-close.ts and the pipeline of
    // tasks/nightly-sales.ts — are the other items).
    expect(runtime.indexRebuild).toMatchObject({ tables: 2, items: 4, removed: 0, added: 0, rewritten: 0 });
    expect(await indexEntries(runtime)).toEqual(await itemsWithOutbox(runtime));
  });
});
