/**
 * The start-up rebuild of dynalite's secondary indexes (local/dynalite-indexes.ts) covers the
 * schedules table's `due` GSI too: it works on every table of the saved store, from each
 * table's own description, whatever its projection. The `due` index projects ALL attributes,
 * so besides phantom and missing entries a torn write can leave an entry holding an older copy
 * of the schedule than the item — which the tick would act on, as it reads no item itself.
 *
 * The torn writes are made as in index-rebuild.test.ts, by writing the store directly as
 * dynalite's `updateIndexes` (delete old entries, put new ones, then put the item) leaves it
 * when the process dies in between. The store is opened as the local runtime opens it
 * (`startEmulators({ dataDir })`, then `ensureResources`, which makes both tables), without
 * the rest of the runtime.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ensureResources } from '../../../local/bootstrap.js';
import { type RunningEmulators, startEmulators } from '../../../local/emulators.js';
import { resourceNames, SCHEDULE_TABLE_SCHEMA } from '../../../shared/config/resources.js';
import { emulatorClients } from '../../../shared/aws/wiring.js';
import type { ScheduleRecord } from '../../../shared/schedule/model.js';
import type { ScheduleDueEntry } from '../../../shared/schedule/schedule-store.js';
import { DynamoScheduleStore } from '../../../shared/aws/dynamo-schedule-store.js';
import { fullSchedule } from '../../contract/schedule-store.contract.js';
import { openSavedIndex, type Stored } from '../../support/dynalite-store.js';

const PREFIX = 'kaj-sched-rebuild';
const TABLE = resourceNames(PREFIX).schedules;
const INDEX = SCHEDULE_TABLE_SCHEMA.dueIndex.name;
const PARTITIONS = Array.from({ length: SCHEDULE_TABLE_SCHEMA.dueIndex.shards }, (_, i) => `due#${i}`);
const T0 = Date.UTC(2030, 0, 1);
const FAR = T0 + 365 * 86_400_000;

/** The saved store opened as `npm start` opens it: indexes rebuilt, then the resources ensured. */
interface Opened {
  readonly emulators: RunningEmulators;
  readonly dynamodb: DynamoDBClient;
  stop(): Promise<void>;
}

let dir: string | undefined;
let runtime: Opened | undefined;

afterEach(async () => {
  await runtime?.stop();
  runtime = undefined;
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

async function open(dataDir: string): Promise<Opened> {
  const emulators = await startEmulators({ dataDir });
  const clients = emulatorClients({ sqs: emulators.sqsEndpoint, dynamodb: emulators.dynamoEndpoint });
  try {
    await ensureResources(clients, PREFIX);
  } catch (err) {
    clients.destroy();
    await emulators.stop();
    throw err;
  }
  return {
    emulators,
    dynamodb: clients.dynamodb,
    stop: async () => {
      clients.destroy();
      await emulators.stop();
    },
  };
}

function storeOf(rt: Opened): DynamoScheduleStore {
  return new DynamoScheduleStore(rt.dynamodb, TABLE);
}

/** Every entry of the due GSI, through `listDue` (what the tick reads), by name. */
async function indexEntries(rt: Opened): Promise<ScheduleDueEntry[]> {
  const out: ScheduleDueEntry[] = [];
  for (const partition of PARTITIONS) {
    let cursor: string | undefined;
    do {
      const page = await storeOf(rt).listDue(partition, FAR, 100, cursor);
      out.push(...page.items);
      cursor = page.cursor;
    } while (cursor !== undefined);
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

/** What the items say the due GSI holds: every schedule with both due keys, as stored. */
async function itemsDue(rt: Opened): Promise<ScheduleDueEntry[]> {
  const out: ScheduleRecord[] = [];
  let cursor: string | undefined;
  do {
    const page = await storeOf(rt).list(100, cursor);
    out.push(...page.items);
    cursor = page.cursor;
  } while (cursor !== undefined);
  return out
    .filter((r) => r.due_pk !== undefined && r.due_at !== undefined)
    .map((r) => ({ name: r.name, due_pk: r.due_pk as string, due_at: r.due_at as number }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** Four due schedules in two shards, and one paused (not in the index). */
async function seed(rt: Opened): Promise<string[]> {
  const store = storeOf(rt);
  const names = ['s-a', 's-b', 's-c', 's-d'];
  for (const [i, name] of names.entries()) {
    await store.put(fullSchedule(name, PARTITIONS[i % 2] as string, T0 + i * 1000), 'absent');
  }
  const { due_pk: _pk, due_at: _at, ...paused } = fullSchedule('s-paused', 'due#0', T0);
  await store.put({ ...paused, state: 'paused' }, 'absent');
  return names;
}

describe('the saved due index of the schedules table after torn writes', () => {
  it('a restart rebuilds it from the items: no phantom entry, none missing, no stale copy', async () => {
    dir = mkdtempSync(join(tmpdir(), 'kaj-sched-index-'));
    runtime = await open(dir);
    const names = await seed(runtime);
    expect((await indexEntries(runtime)).map((r) => r.name)).toEqual(names);
    await runtime.stop();
    runtime = undefined;

    // Tear the store as a SIGKILL between dynalite's writes would.
    const db = await openSavedIndex(dir, TABLE, INDEX);
    const entryOf = (name: string) => db.entryOf('name', name);
    // 1. PutItem of a schedule that never got its item: an entry for a schedule that does not exist.
    const ghost: Stored = { ...entryOf('s-a')[1], name: { S: 's-ghost' } };
    await db.put(ghost);
    // 2. A tick's put moving `s-b`'s due time: old entry deleted, new one put, item not written.
    const [oldKey, oldValue] = entryOf('s-b');
    const movedOn: Stored = { ...oldValue, due_at: { N: String(T0 + 3_600_000) }, version: { N: '13' } };
    await db.del(oldKey);
    await db.put(movedOn);
    // 3. A put that kept `s-c`'s due keys, torn after the index write: the entry is a copy the item never became.
    const [staleKey, staleValue] = entryOf('s-c');
    await db.putAt(staleKey, { ...staleValue, state: { S: 'paused' }, version: { N: '99' } });
    await db.close();

    runtime = await open(dir);
    const after = await indexEntries(runtime);
    expect(after).toStrictEqual(await itemsDue(runtime));
    expect(after.map((r) => r.name)).toEqual(names);
    const sc = await storeOf(runtime).get('s-c');
    expect(after.find((r) => r.name === 's-c')).toStrictEqual({ name: 's-c', due_pk: sc?.due_pk, due_at: sc?.due_at });
    expect(runtime.emulators.indexRebuild).toMatchObject({ removed: 2, added: 1, rewritten: 1 });
  });

  it('an intact store is left as it is (both tables: tasks with its outbox index, schedules with due)', async () => {
    dir = mkdtempSync(join(tmpdir(), 'kaj-sched-index-'));
    runtime = await open(dir);
    await seed(runtime);
    await runtime.stop();
    runtime = await open(dir);
    expect(runtime.emulators.indexRebuild).toMatchObject({ tables: 2, items: 5, removed: 0, added: 0, rewritten: 0 });
    expect(await indexEntries(runtime)).toStrictEqual(await itemsDue(runtime));
  });
});
