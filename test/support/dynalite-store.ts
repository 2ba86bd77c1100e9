/**
 * dynalite's saved store (the LevelDB of `npm start`'s data directory), opened as dynalite's own
 * writes use it, to tear one table's GSI as a SIGKILL between dynalite's separate writes of an item
 * and of its index entries would (`updateIndexes`: delete old entries, put new ones, then put the item).
 * Open it only while no emulator has the directory open.
 *
 * @module
 */
import { createRequire } from 'node:module';

/** An item or index entry as dynalite stores it: attribute values in DynamoDB JSON. */
export type Stored = Record<string, Record<string, unknown>>;

interface Level {
  open(): Promise<void>;
  close(): Promise<void>;
  get(key: string): Promise<unknown>;
  put(key: string, value: unknown): Promise<void>;
  del(key: string): Promise<void>;
  iterator(range: { gte: string; lt: string }): AsyncIterable<[string, unknown]>;
}
// dynalite's own LevelDB binding and key function, as its writes use them.
const fromDynalite = createRequire(createRequire(import.meta.url).resolve('dynalite'));
const { Level } = fromDynalite('level') as { Level: new (path: string, o: { valueEncoding: 'json' }) => Level };
const dynaliteDb = fromDynalite('./db/index.js') as {
  createIndexKey(item: Stored, table: unknown, keySchema: unknown): string;
};

/** One GSI of a saved table, its entries read at opening. */
export interface SavedIndex {
  /** The entry whose attribute `attribute` is the string `value`, with its key. */
  entryOf(attribute: string, value: string): [string, Stored];
  /** Puts an entry under the key dynalite gives it. */
  put(entry: Stored): Promise<void>;
  /** Puts a value under an existing entry's key. */
  putAt(key: string, entry: Stored): Promise<void>;
  del(key: string): Promise<void>;
  close(): Promise<void>;
}

export async function openSavedIndex(dir: string, tableName: string, indexName: string): Promise<SavedIndex> {
  const prefix = `index-global~${tableName}~${indexName}~`;
  const db = new Level(dir, { valueEncoding: 'json' });
  await db.open();
  const table = await db.get(`table~${tableName}`);
  const indexSchema = (
    table as { GlobalSecondaryIndexes: Array<{ IndexName: string; KeySchema: unknown }> }
  ).GlobalSecondaryIndexes.find((g) => g.IndexName === indexName)?.KeySchema;
  const entries = new Map<string, Stored>();
  for await (const [key, value] of db.iterator({ gte: prefix, lt: `${prefix}\xff` })) entries.set(key, value as Stored);
  return {
    entryOf: (attribute, value) => [...entries].find(([, v]) => v[attribute]?.S === value) as [string, Stored],
    put: (entry) => db.put(prefix + dynaliteDb.createIndexKey(entry, table, indexSchema), entry),
    putAt: (key, entry) => db.put(key, entry),
    del: (key) => db.del(key),
    close: () => db.close(),
  };
}
