/**
 * The `HistoryStore` contract on the in-memory fake the workflow runner's unit tests use, and the
 * fake's own test hooks (failures on demand, a hook before each append, counters).
 */
import { describe, expect, it } from 'vitest';
import { StoreRejectedError, StoreUnavailableError } from '../../shared/task/store-errors.js';
import { MAX_ITEM_BYTES, MemoryHistoryStore } from '../../testing/memory-history-store.js';
import { historyStoreContract, stepEntry } from './history-store.contract.js';

historyStoreContract('MemoryHistoryStore', async () => ({
  store: new MemoryHistoryStore(),
  cleanup: async () => {},
}));

describe('Class: MemoryHistoryStore (test hooks)', () => {
  it('failNext fails the next call of one operation only, and the store then works again', async () => {
    const store = new MemoryHistoryStore();
    store.failNext.append = new StoreUnavailableError('injected');
    await expect(store.append(stepEntry('r', 'a', 1))).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(store.all()).toEqual([]);
    expect((await store.append(stepEntry('r', 'a', 1))).written).toBe(true);
    store.failNext.read = new StoreUnavailableError('injected');
    await expect(store.read('r')).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(await store.read('r')).toHaveLength(1);
  });

  it('counts the entries written (not an append that found its key taken) and the reads', async () => {
    const store = new MemoryHistoryStore();
    await store.append(stepEntry('r', 'a', 1));
    await store.append(stepEntry('r', 'a', 2));
    await store.append(stepEntry('r', 'b', 3));
    await store.read('r');
    await store.read('other');
    expect(store.writes).toBe(2);
    expect(store.reads).toBe(2);
  });

  it('beforeAppend runs before the append is decided: a concurrent append there wins the key', async () => {
    const store = new MemoryHistoryStore();
    const rival = stepEntry('r', 'a', 'rival');
    store.beforeAppend = async () => {
      store.beforeAppend = undefined;
      await store.append(rival);
    };
    expect(await store.append(stepEntry('r', 'a', 'mine'))).toStrictEqual({ written: false, entry: rival });
  });

  it('measures an entry as the JSON of the stored item: just under 400 KB fits, just over is rejected', async () => {
    const store = new MemoryHistoryStore();
    const base = stepEntry('r', 'a', '');
    const overhead = Buffer.byteLength(JSON.stringify({ ...base, value: undefined, value_json: '""' }));
    const fits = stepEntry('r', 'a', 'x'.repeat(MAX_ITEM_BYTES - overhead));
    expect((await store.append(fits)).written).toBe(true);
    const over = stepEntry('r', 'b', 'x'.repeat(MAX_ITEM_BYTES - overhead + 1));
    await expect(store.append(over)).rejects.toBeInstanceOf(StoreRejectedError);
  });
});
