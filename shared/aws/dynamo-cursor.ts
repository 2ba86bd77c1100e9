/**
 * The opaque cursors of a DynamoDB listing (a Query or a Scan read page by page): the page's
 * `LastEvaluatedKey` as a short string, and back, refusing anything no page of the listing gave.
 * A refusal, like a bad page size, is thrown before the request is sent, as an error named
 * `ValidationException`: `dynamoStoreError` (`./dynamo-errors.ts`) maps it to a `StoreRejectedError`.
 *
 * @module
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';

/** A limit DynamoDB would refuse, refused before sending (moto answers Limit 0 with a body the SDK cannot parse). */
export function checkLimit(limit: number): void {
  if (!Number.isInteger(limit) || limit < 1) {
    throw new InvalidRequest(`limit must be an integer >= 1, got ${limit}`);
  }
}

/**
 * The opaque cursor of a page: base64url of the JSON of `LastEvaluatedKey`, unmarshalled (its
 * values are key attributes: strings and numbers only), so that it stays short.
 */
export function cursorOfKey(key: Record<string, AttributeValue>): string {
  return Buffer.from(JSON.stringify(unmarshall(key)), 'utf8').toString('base64url');
}

/** DynamoDB's limit on a sort key (a partition key may have 2,048 bytes): no key of these tables comes near. */
const MAX_KEY_BYTES = 1024;

/**
 * `ExclusiveStartKey` from a cursor; an `InvalidRequest` for anything no page of this listing
 * gave (the table's `partitionKey` a string; `fits` checks the key attributes beyond it).
 */
export function keyOfCursor(
  cursor: string,
  partitionKey: string,
  fits: (key: Record<string, string | number>) => boolean,
): Record<string, AttributeValue> {
  let key: unknown;
  try {
    key = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch (err) {
    throw new InvalidRequest('the cursor is not one this store gave', { cause: err });
  }
  const valid =
    typeof key === 'object' &&
    key !== null &&
    !Array.isArray(key) &&
    typeof (key as Record<string, unknown>)[partitionKey] === 'string' &&
    // Key values DynamoDB takes: a non-empty string within its key size, a number it can hold.
    Object.values(key).every(
      (v) =>
        (typeof v === 'string' && v !== '' && Buffer.byteLength(v) <= MAX_KEY_BYTES) ||
        (typeof v === 'number' && Number.isSafeInteger(v)),
    ) &&
    fits(key as Record<string, string | number>);
  if (!valid) throw new InvalidRequest('the cursor is not one this store gave');
  return marshall(key as Record<string, string | number>);
}

/** A request refused before it is sent (bad limit, bad cursor): mapped to `StoreRejectedError`. */
class InvalidRequest extends Error {
  override readonly name = 'ValidationException';
}
