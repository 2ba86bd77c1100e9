import { StoreRejectedError } from '../shared/task/store-errors.js';
import type { AppendResult, HistoryEntry, HistoryStore } from '../shared/workflow/history-store.js';

type Operation = 'read' | 'append';

/** DynamoDB's largest item. */
export const MAX_ITEM_BYTES = 400 * 1024;
/** DynamoDB's largest partition key and sort key values (UTF-8 bytes). */
const MAX_PARTITION_KEY_BYTES = 2048;
const MAX_SORT_KEY_BYTES = 1024;

const NUMBERS = ['at', 'lease_token', 'started_at', 'attempt', 'until', 'seq', 'expires_at'] as const;

/**
 * The HistoryStore contract in memory, for unit tests of the workflow runner. It behaves as
 * `DynamoHistoryStore` on DynamoDB does, and `test/contract/` proves it on the same suite:
 * - an entry is stored as the adapter stores it: `undefined` members dropped, `value` and
 *   `error` through JSON (so what comes back is what a replay reads); a value that is no JSON
 *   (a BigInt, a function), a number field that is not finite, an empty key or one longer than
 *   DynamoDB allows, and an entry over 400 KB (measured as the JSON of the stored item, with
 *   `value` and `error` as JSON text) are `StoreRejectedError`s, storing nothing;
 * - the first append of a key wins: a later one returns `written: false` and a copy of the stored
 *   entry, which stays as it was;
 * - `read` gives the run's entries in key order (UTF-8 byte order, as DynamoDB sorts a string
 *   sort key), none of any other run.
 * Everything handed in or out is a copy.
 */
export class MemoryHistoryStore implements HistoryStore {
  /** The stored entries: run id → key → entry. */
  readonly runs = new Map<string, Map<string, HistoryEntry>>();
  /** Make the next call of an operation throw. */
  failNext: Partial<Record<Operation, Error>> = {};
  /** Runs before each append is decided (to inject a concurrent append or a failure). */
  beforeAppend: ((entry: HistoryEntry) => void | Promise<void>) | undefined;
  /** Entries written so far (an append that found its key taken writes nothing). */
  writes = 0;
  /** Reads made so far (one per `read`, whatever its size). */
  reads = 0;

  async read(runId: string): Promise<HistoryEntry[]> {
    this.reads += 1;
    this.maybeFail('read');
    checkKey(runId, 'run_id', MAX_PARTITION_KEY_BYTES);
    const run = this.runs.get(runId);
    if (run === undefined) return [];
    return [...run.values()].sort((a, b) => byteOrder(a.key, b.key)).map((e) => structuredClone(e));
  }

  async append(entry: HistoryEntry): Promise<AppendResult> {
    this.maybeFail('append');
    const stored = storable(entry);
    await this.beforeAppend?.(entry);
    const run = this.runs.get(stored.run_id) ?? new Map<string, HistoryEntry>();
    const existing = run.get(stored.key);
    if (existing !== undefined) return { written: false, entry: structuredClone(existing) };
    run.set(stored.key, stored);
    this.runs.set(stored.run_id, run);
    this.writes += 1;
    return { written: true, entry: structuredClone(stored) };
  }

  /** Every entry stored, of every run (copies), for assertions. */
  all(): HistoryEntry[] {
    return [...this.runs.values()].flatMap((run) => [...run.values()].map((e) => structuredClone(e)));
  }

  private maybeFail(op: Operation): void {
    const err = this.failNext[op];
    if (err) {
      delete this.failNext[op];
      throw err;
    }
  }
}

/** The entry as the adapter would store it and read it back, or a StoreRejectedError. */
function storable(entry: HistoryEntry): HistoryEntry {
  checkKey(entry.run_id, 'run_id', MAX_PARTITION_KEY_BYTES);
  checkKey(entry.key, 'key', MAX_SORT_KEY_BYTES);
  if (typeof entry.kind !== 'string') reject(`kind must be a string`);
  const out: Record<string, unknown> = { run_id: entry.run_id, key: entry.key, kind: entry.kind };
  for (const field of NUMBERS) {
    const n = entry[field];
    if (n === undefined) continue;
    if (typeof n !== 'number' || !Number.isFinite(n)) reject(`${field} must be a finite number, got ${String(n)}`);
    out[field] = n;
  }
  for (const field of ['child_id', 'child_status'] as const) {
    const v = entry[field];
    if (v === undefined) continue;
    if (typeof v !== 'string') reject(`${field} must be a string`);
    out[field] = v;
  }
  // The item as DynamoDB would hold it: value and error as JSON text (what its size is measured on).
  const item: Record<string, unknown> = { ...out };
  if (entry.value !== undefined) {
    item.value_json = json(entry.value, 'value');
    out.value = JSON.parse(item.value_json as string);
  }
  if (entry.error !== undefined) {
    item.error_json = json(entry.error, 'error');
    out.error = JSON.parse(item.error_json as string);
  }
  const bytes = Buffer.byteLength(JSON.stringify(item), 'utf8');
  if (bytes > MAX_ITEM_BYTES) reject(`Item size has exceeded the maximum allowed size (${bytes} bytes)`);
  return out as unknown as HistoryEntry;
}

function json(v: unknown, field: string): string {
  let out: string | undefined;
  try {
    out = JSON.stringify(v);
  } catch (err) {
    reject(`${field} is not JSON: ${String(err)}`);
  }
  if (out === undefined) reject(`${field} is not JSON`);
  return out;
}

/** As DynamoDB: a key attribute is a string of 1 to `max` UTF-8 bytes. */
function checkKey(v: unknown, field: string, max: number): void {
  if (typeof v !== 'string') reject(`${field} must be a string`);
  if (v === '') reject(`One or more parameter values are not valid: the key ${field} is an empty string`);
  if (Buffer.byteLength(v, 'utf8') > max) reject(`the key ${field} is longer than ${max} bytes`);
}

/** DynamoDB's order of string sort keys: their UTF-8 bytes. */
function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

function reject(why: string): never {
  throw new StoreRejectedError(`memory history store rejected: ValidationException: ${why}`);
}
