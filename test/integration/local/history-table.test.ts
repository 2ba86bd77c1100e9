/**
 * The history table of the local runtime, on every emulator target: `ensureResources` makes it from
 * the stack's own definition (`HISTORY_TABLE_SCHEMA`), `findResources` (what a worker process and
 * the CLI use) finds it and says so when it is not there, `deleteResources` removes it; the local
 * runtime hands its name to the all-in-one root, whose `kaj.history` reads and appends there; and
 * on the embedded emulators with a data directory, a history outlives a restart.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeleteTableCommand, DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteResources, ensureResources } from '../../../local/bootstrap.js';
import { startLocalRuntime } from '../../../local/runtime.js';
import { emulatorClients, findResources, type KajClients } from '../../../shared/aws/wiring.js';
import { ENV, HISTORY_TABLE_SCHEMA, resourceNames } from '../../../shared/config/resources.js';
import { functionEnvironment, loadFunctionConfig } from '../../../shared/config/settings.js';
import type { HistoryEntry } from '../../../shared/workflow/history-store.js';
import { uniquePrefix } from '../../../testing/wait.js';
import { startEndpoints, type TargetEndpoints } from '../../support/emulator-endpoints.js';
import { startOnTarget, targets } from '../../support/targets.js';

const entry = (runId: string, name: string, value: unknown): HistoryEntry => ({
  run_id: runId,
  key: `step#${name}`,
  kind: 'step',
  at: Date.UTC(2030, 0, 1),
  lease_token: 1,
  value,
});

describe.each(targets())('the history table of the local runtime on $name', (target) => {
  let started: TargetEndpoints | undefined;
  let clients: KajClients | undefined;

  beforeAll(async () => {
    started = await startEndpoints(target);
    clients = emulatorClients(started.endpoints);
  });
  afterAll(async () => {
    clients?.destroy();
    await started?.stop();
  });

  it('ensureResources makes it (run_id + key, both strings, no index), idempotently; findResources finds it; deleteResources removes it', async () => {
    if (clients === undefined) throw new Error('the emulator did not start');
    const prefix = uniquePrefix('hist');
    const names = resourceNames(prefix);
    try {
      const made = await ensureResources(clients, prefix);
      expect(made.historyTableName).toBe(names.history);
      expect((await ensureResources(clients, prefix)).historyTableName).toBe(names.history);
      const table = (await clients.dynamodb.send(new DescribeTableCommand({ TableName: names.history }))).Table;
      expect(table?.KeySchema).toEqual([
        { AttributeName: HISTORY_TABLE_SCHEMA.partitionKey, KeyType: 'HASH' },
        { AttributeName: HISTORY_TABLE_SCHEMA.sortKey, KeyType: 'RANGE' },
      ]);
      expect(new Map(table?.AttributeDefinitions?.map((a) => [a.AttributeName, a.AttributeType]))).toEqual(
        new Map([
          ['run_id', 'S'],
          ['key', 'S'],
        ]),
      );
      expect(table?.GlobalSecondaryIndexes ?? []).toEqual([]);
      const found = await findResources(clients, prefix);
      expect(found.historyTableName).toBe(names.history);
      expect(found.limitsTableName).toBe(names.limits);
      // The functions' environment carries it as the stack would set it.
      const env = functionEnvironment({ ...found, historyTableName: names.history });
      expect(env[ENV.historyTableName]).toBe(names.history);
      expect(loadFunctionConfig(env).historyTableName).toBe(names.history);

      // A deployment without one (a stack with no workflow type): found without it.
      await clients.dynamodb.send(new DeleteTableCommand({ TableName: names.history }));
      expect(await findResources(clients, prefix)).not.toHaveProperty('historyTableName');
      await ensureResources(clients, prefix);
    } finally {
      await deleteResources(clients, prefix);
    }
    await expect(clients.dynamodb.send(new DescribeTableCommand({ TableName: names.history }))).rejects.toMatchObject({
      name: 'ResourceNotFoundException',
    });
  }, 60_000);

  it('the runtime names it to the all-in-one root: kaj.history appends and reads there', async () => {
    const prefix = uniquePrefix('hist-rt');
    const { runtime, stop } = await startOnTarget(target, { prefix, port: 0, consumers: false, scheduler: false });
    try {
      expect(runtime.config.historyTableName).toBe(resourceNames(prefix).history);
      const history = runtime.kaj.history;
      expect(history).toBeDefined();
      const first = entry('run-1', 'a', { ok: true });
      expect(await history?.append(first)).toStrictEqual({ written: true, entry: first });
      expect(await history?.append(entry('run-1', 'a', { ok: false }))).toStrictEqual({ written: false, entry: first });
      expect(await history?.read('run-1')).toStrictEqual([first]);
    } finally {
      await stop();
    }
  }, 60_000);
});

describe('the history table of npm start with a data directory', () => {
  let dir: string | undefined;
  afterAll(() => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('keeps a run’s history across a restart', async () => {
    dir = mkdtempSync(join(tmpdir(), 'kaj-history-'));
    const open = () =>
      startLocalRuntime({ dataDir: dir, prefix: 'kaj-hist', port: 0, consumers: false, scheduler: false });
    const first = await open();
    const written = entry('run-1', 'charge', { charge_id: 'ch_1' });
    try {
      await first.kaj.history?.append(written);
    } finally {
      await first.stop(1_000);
    }
    const second = await open();
    try {
      expect(await second.kaj.history?.read('run-1')).toStrictEqual([written]);
    } finally {
      await second.stop(1_000);
    }
  }, 60_000);
});
