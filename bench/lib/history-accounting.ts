/**
 * The workflow history store, billed: every entry read and written by AWS's unit rules on the
 * item the history table's adapter writes (`historyItemOf`), and the storage each entry holds
 * until its TTL. Wraps the contract-tested memory store (`testing/memory-history-store.ts`).
 *
 * @module
 */
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { historyItemOf } from '../../shared/aws/dynamo-history-store.js';
import type { AppendResult, HistoryEntry, HistoryStore } from '../../shared/workflow/history-store.js';
import { MemoryHistoryStore } from '../../testing/memory-history-store.js';
import { itemSize, readUnits, writeUnits } from './dynamo-accounting.js';

/** DynamoDB storage counts 100 bytes of overhead per item. */
const ITEM_OVERHEAD = 100;
const MONTH_S = 30.4375 * 86_400;

export class MeteredHistory implements HistoryStore {
  readonly inner = new MemoryHistoryStore();
  writeUnits = 0;
  writes = 0;
  queries = 0;
  readUnits = 0;
  /** Bytes × months stored (each entry from its write to its TTL), in GB-months. */
  storageGbMonths = 0;

  async read(runId: string): Promise<HistoryEntry[]> {
    const entries = await this.inner.read(runId);
    this.queries += 1;
    this.readUnits += readUnits(
      entries.reduce((n, e) => n + historyBytes(e), 0),
      true,
    );
    return entries;
  }

  async append(entry: HistoryEntry): Promise<AppendResult> {
    const result = await this.inner.append(entry);
    this.writes += 1;
    this.writeUnits += writeUnits(historyBytes(entry)); // a refused conditional put is billed as a write too
    if (result.written && entry.expires_at !== undefined) {
      const months = (entry.expires_at - entry.at / 1000) / MONTH_S;
      this.storageGbMonths += ((historyBytes(entry) + ITEM_OVERHEAD) / 1024 ** 3) * months;
    }
    return result;
  }
}

/** The size of an entry's item, as DynamoDB counts it. */
export function historyBytes(entry: HistoryEntry): number {
  return itemSize(unmarshall(historyItemOf(entry)));
}
