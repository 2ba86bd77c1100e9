/**
 * Crash consistency for dynalite's on-disk store: rebuilds every secondary index from the items.
 *
 * dynalite writes an item and its index entries as separate LevelDB writes (PutItem/UpdateItem/
 * DeleteItem: delete the old index entries, put the new ones, then put the item — see
 * `updateIndexes` in dynalite/db/index.js). A process killed between those writes leaves
 * entries for states the item never reached (phantom: the outbox GSI then lists a task that
 * owes nothing, and the sweeper re-sends it forever), or no entry for the state it is in
 * (missing: a message owed by the task is never sent). LevelDB itself survives a SIGKILL (every
 * write that returned is in its log), so the items are right; only the derived index is not.
 *
 * Why a rebuild at start rather than anything else:
 * - the items are the source of truth (on DynamoDB, too, a GSI is derived from them), so the
 *   rebuild is correct whatever interleaving of torn writes came before, and needs no record
 *   of what was in flight;
 * - it runs on the closed store, before dynalite opens it, so nothing can read or write the
 *   table meanwhile;
 * - every change goes in one LevelDB batch, which is atomic on disk: killed during the rebuild,
 *   the store keeps its old index and the next start rebuilds again;
 * - the keys and projected values come from dynalite's own `getIndexActions`, the function its
 *   writes use, so a rebuilt entry is byte for byte what dynalite would have written;
 * - deleting and re-creating the GSI through UpdateTable instead would leave a table without its
 *   index if killed in between, and patching dynalite to batch its writes would fix only the
 *   future, not a store already torn.
 * It costs one pass over the store at start, done only for a persisted store.
 *
 * @module
 */
import { createRequire } from 'node:module';
import { KajError } from '../shared/errors.js';

/** What {@link rebuildSecondaryIndexes} found and fixed. */
export interface IndexRebuildReport {
  /** Tables with at least one secondary index. */
  readonly tables: number;
  /** Items read. */
  readonly items: number;
  /** Index entries no item calls for (torn write: the item moved on, or never got written). */
  readonly removed: number;
  /** Index entries an item calls for that were absent. */
  readonly added: number;
  /** Entries under the right key holding another version of the item (the projection). */
  readonly rewritten: number;
}

/** The rebuild could not read or write the store; nothing was changed (one atomic batch). */
export class IndexRebuildError extends KajError {
  readonly retryable = false;
}

type KeySchema = ReadonlyArray<{ readonly AttributeName: string; readonly KeyType: string }>;

interface IndexDescription {
  readonly IndexName: string;
  readonly KeySchema: KeySchema;
  readonly Projection: { readonly ProjectionType: string; readonly NonKeyAttributes?: readonly string[] };
}

/** A table as dynalite stores its description (`table~<name>`). */
interface TableDescription {
  readonly TableName: string;
  readonly KeySchema: KeySchema;
  readonly AttributeDefinitions: ReadonlyArray<{ readonly AttributeName: string; readonly AttributeType: string }>;
  readonly GlobalSecondaryIndexes?: readonly IndexDescription[];
  readonly LocalSecondaryIndexes?: readonly IndexDescription[];
}

type StoredItem = Record<string, unknown>;

interface DynaliteDb {
  /** The index entries that `item` calls for (with no previous item: puts only). */
  getIndexActions(
    indexes: readonly IndexDescription[],
    existingItem: StoredItem | undefined,
    item: StoredItem,
    table: TableDescription,
  ): { puts: Array<{ index: string; key: string; item: StoredItem }>; deletes: Array<{ index: string; key: string }> };
}

type BatchOp = { type: 'put'; key: string; value: unknown } | { type: 'del'; key: string };

interface LevelDb {
  open(): Promise<void>;
  close(): Promise<void>;
  iterator(range: { gte: string; lt: string }): AsyncIterable<[string, unknown]>;
  batch(ops: BatchOp[]): Promise<void>;
}

// dynalite's own copies: `level` is its dependency (not Kaj's), and db/index.js holds the key
// functions its writes use. Resolved from dynalite so hoisting cannot hand us another version.
const fromDynalite = createRequire(createRequire(import.meta.url).resolve('dynalite'));
const { Level } = fromDynalite('level') as { Level: new (path: string, o: { valueEncoding: 'json' }) => LevelDb };
const dynaliteDb = fromDynalite('./db/index.js') as DynaliteDb;

// dynalite's sublevels are key prefixes `<name>~` on one LevelDB (createPrefixedDbWrapper).
// Keys after a prefix are ASCII (hex and '/'), so '\xff' bounds a prefix range as dynalite's own reads do.
const range = (prefix: string) => ({ gte: prefix, lt: `${prefix}\xff` });
const INDEX_KINDS = [
  { kind: 'Local', field: 'LocalSecondaryIndexes' },
  { kind: 'Global', field: 'GlobalSecondaryIndexes' },
] as const;
const indexPrefix = (kind: 'Local' | 'Global', table: string, index: string) =>
  `index-${kind.toLowerCase()}~${table}~${index}~`;

/**
 * Makes every secondary index of every table in the dynalite store at `path` match its items,
 * in one atomic batch. Call it while no dynalite holds the store (LevelDB allows one opener).
 *
 * @throws IndexRebuildError when the store cannot be opened, read or written.
 */
export async function rebuildSecondaryIndexes(path: string): Promise<IndexRebuildReport> {
  const db = new Level(path, { valueEncoding: 'json' });
  try {
    await db.open();
  } catch (err) {
    throw new IndexRebuildError(`cannot open the DynamoDB store in ${path} (is another npm start using it?)`, {
      cause: err,
    });
  }
  try {
    const tables: TableDescription[] = [];
    for await (const [, value] of db.iterator(range('table~'))) {
      const t = value as TableDescription;
      if (INDEX_KINDS.some(({ field }) => (t[field]?.length ?? 0) > 0)) tables.push(t);
    }
    const ops: BatchOp[] = [];
    let items = 0;
    let removed = 0;
    let added = 0;
    let rewritten = 0;
    for (const table of tables) {
      const wanted = new Map<string, StoredItem>();
      for await (const [, item] of db.iterator(range(`item-${table.TableName}~`))) {
        items += 1;
        for (const { kind, field } of INDEX_KINDS) {
          const indexes = table[field] ?? [];
          if (indexes.length === 0) continue;
          for (const put of dynaliteDb.getIndexActions(indexes, undefined, item as StoredItem, table).puts) {
            wanted.set(indexPrefix(kind, table.TableName, put.index) + put.key, put.item);
          }
        }
      }
      for (const { kind, field } of INDEX_KINDS) {
        for (const index of table[field] ?? []) {
          for await (const [key, value] of db.iterator(range(indexPrefix(kind, table.TableName, index.IndexName)))) {
            const want = wanted.get(key);
            if (want === undefined) {
              ops.push({ type: 'del', key });
              removed += 1;
            } else {
              if (JSON.stringify(want) !== JSON.stringify(value)) {
                ops.push({ type: 'put', key, value: want });
                rewritten += 1;
              }
              wanted.delete(key);
            }
          }
        }
      }
      for (const [key, value] of wanted) {
        ops.push({ type: 'put', key, value });
        added += 1;
      }
    }
    if (ops.length > 0) await db.batch(ops);
    return { tables: tables.length, items, removed, added, rewritten };
  } catch (err) {
    throw new IndexRebuildError(`cannot rebuild the secondary indexes of the DynamoDB store in ${path}`, {
      cause: err,
    });
  } finally {
    await db.close().catch(() => undefined);
  }
}
