import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
  ScanCommand,
  UpdateItemCommand,
  type UpdateItemCommandInput,
} from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { LIMIT_TABLE_SCHEMA } from '../config/resources.js';
import { StoreRejectedError, StoreUnavailableError } from '../task/store-errors.js';
import {
  type AddHolderResult,
  type LimitItem,
  type LimitStore,
  MAX_EVICT_PER_CALL,
  type RateRequest,
  type SlotHolders,
  type TakeRateResult,
} from '../limit/limit-store.js';
import { dynamoStoreError } from './dynamo-errors.js';

const PK = LIMIT_TABLE_SCHEMA.partitionKey;
const TTL = LIMIT_TABLE_SCHEMA.ttlAttribute;

/**
 * Conditional writes one call may try before it settles for the state it saw: each failure means
 * another worker changed the item in between, so a few are plenty.
 */
const MAX_WRITES_PER_CALL = 4;

/**
 * `LimitStore` on the limits table (`LIMIT_TABLE_SCHEMA`), on the low-level client, as
 * `DynamoScheduleStore`: every operation is one conditional UpdateItem in the common case, and
 * a failed condition is read back from `ReturnValuesOnConditionCheckFailure: ALL_OLD` (or from a
 * consistent GetItem where the emulator ignores that option) to give the answer.
 *
 * Numbers go out as exact decimal strings built from whole microseconds (see `decimal`), so
 * DynamoDB's exact decimal arithmetic keeps `tat` on the grid the limiter computes on.
 */
export class DynamoLimitStore implements LimitStore {
  constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
  ) {}

  async addHolder(
    pk: string,
    holderId: string,
    leaseUntil: number,
    capacity: number,
    expiresAt?: number,
  ): Promise<AddHolderResult> {
    let holders: SlotHolders = {};
    for (let i = 0; i < MAX_WRITES_PER_CALL; i += 1) {
      // DynamoDB cannot SET holders.#h while `holders` does not exist, hence two writes: into the
      // map when it exists and has room, or the map itself when it does not exist yet.
      const added = await this.update(
        pk,
        {
          UpdateExpression: `SET #holders.#h = :until${ttlSet(expiresAt)}`,
          ConditionExpression: 'attribute_exists(#holders) AND size(#holders) < :cap',
          ExpressionAttributeNames: { '#holders': 'holders', '#h': holderId, ...ttlName(expiresAt) },
          ExpressionAttributeValues: { ':until': num(leaseUntil), ':cap': num(capacity), ...ttlValue(expiresAt) },
        },
        'UpdateItem (add holder)',
      );
      if (added.ok) return { kind: 'granted' };
      const seen = added.item?.holders;
      if (seen === undefined) {
        const created = await this.update(
          pk,
          {
            UpdateExpression: `SET #holders = :map${ttlSet(expiresAt)}`,
            ConditionExpression: 'attribute_not_exists(#holders)',
            ExpressionAttributeNames: { '#holders': 'holders', ...ttlName(expiresAt) },
            ExpressionAttributeValues: { ':map': { M: { [holderId]: num(leaseUntil) } }, ...ttlValue(expiresAt) },
          },
          'UpdateItem (create holders)',
        );
        if (created.ok) return { kind: 'granted' };
        continue; // another worker made the map first: add into it
      }
      holders = seen;
      // Full as seen. Only a GetItem fallback can see room here (the item changed after the
      // failed write): then the add is worth another try.
      if (Object.keys(seen).length >= capacity) return { kind: 'full', holders };
    }
    return { kind: 'full', holders };
  }

  async renewHolder(pk: string, holderId: string, leaseUntil: number, expiresAt?: number): Promise<boolean> {
    const r = await this.update(
      pk,
      {
        UpdateExpression: `SET #holders.#h = :until${ttlSet(expiresAt)}`,
        ConditionExpression: 'attribute_exists(#holders.#h)',
        ExpressionAttributeNames: { '#holders': 'holders', '#h': holderId, ...ttlName(expiresAt) },
        ExpressionAttributeValues: { ':until': num(leaseUntil), ...ttlValue(expiresAt) },
      },
      'UpdateItem (renew holder)',
      { readBack: false },
    );
    return r.ok;
  }

  async removeHolder(pk: string, holderId: string): Promise<void> {
    // The condition keeps REMOVE from creating an empty item for a key that has none, and from
    // failing on a missing map (DynamoDB refuses a path through a map that does not exist).
    await this.update(
      pk,
      {
        UpdateExpression: 'REMOVE #holders.#h',
        ConditionExpression: 'attribute_exists(#holders.#h)',
        ExpressionAttributeNames: { '#holders': 'holders', '#h': holderId },
      },
      'UpdateItem (remove holder)',
      { readBack: false },
    );
  }

  async evictHolders(pk: string, expired: SlotHolders): Promise<boolean> {
    const entries = Object.entries(expired);
    if (entries.length > MAX_EVICT_PER_CALL) {
      throw new StoreRejectedError(
        `DynamoDB UpdateItem refused before sending: more than ${MAX_EVICT_PER_CALL} holders`,
      );
    }
    if (entries.length === 0) return true;
    const names: Record<string, string> = { '#holders': 'holders' };
    const values: Record<string, AttributeValue> = {};
    const paths: string[] = [];
    const checks: string[] = [];
    entries.forEach(([id, until], i) => {
      names[`#h${i}`] = id;
      values[`:u${i}`] = num(until);
      paths.push(`#holders.#h${i}`);
      checks.push(`#holders.#h${i} = :u${i}`);
    });
    const r = await this.update(
      pk,
      {
        UpdateExpression: `REMOVE ${paths.join(', ')}`,
        ConditionExpression: checks.join(' AND '),
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      },
      'UpdateItem (evict holders)',
      { readBack: false },
    );
    return r.ok;
  }

  async takeRate(pk: string, req: RateRequest): Promise<TakeRateResult> {
    const now = micros(req.now);
    const nT = micros(req.intervalMs) * req.count;
    // The first start, max(now, tat − τ), must be within now + horizon.
    const limit = now + micros(req.horizonMs) + micros(req.toleranceMs);
    const notPaused = '(attribute_not_exists(#pu) OR #pu <= :now)';
    const names = { '#tat': 'tat', '#pu': 'paused_until', ...ttlName(req.expiresAt) };
    let busy = req.lastTat !== undefined && micros(req.lastTat) >= now;
    let seen: LimitItem | undefined;
    for (let i = 0; i < MAX_WRITES_PER_CALL; i += 1) {
      if (busy) {
        const r = await this.update(
          pk,
          {
            UpdateExpression: `SET #tat = #tat + :nT${ttlSet(req.expiresAt)}`,
            ConditionExpression: `#tat BETWEEN :now AND :limit AND ${notPaused}`,
            ExpressionAttributeNames: names,
            ExpressionAttributeValues: {
              ':nT': decimal(nT),
              ':now': decimal(now),
              ':limit': decimal(limit),
              ...ttlValue(req.expiresAt),
            },
            ReturnValues: 'UPDATED_NEW',
          },
          'UpdateItem (take rate)',
        );
        if (r.ok) {
          const tat = r.attributes?.tat;
          if (tat?.N === undefined) throw new StoreUnavailableError(`DynamoDB UpdateItem on "${pk}" returned no tat`);
          return { kind: 'granted', tat: Number(tat.N) };
        }
        seen = r.item;
      } else {
        const r = await this.update(
          pk,
          {
            UpdateExpression: `SET #tat = :next${ttlSet(req.expiresAt)}`,
            ConditionExpression: `(attribute_not_exists(#tat) OR #tat < :now) AND ${notPaused}`,
            ExpressionAttributeNames: names,
            ExpressionAttributeValues: { ':next': decimal(now + nT), ':now': decimal(now), ...ttlValue(req.expiresAt) },
          },
          'UpdateItem (take rate)',
        );
        if (r.ok) return { kind: 'granted', tat: (now + nT) / 1000 };
        seen = r.item;
      }
      const tatSeen = seen?.tat === undefined ? undefined : micros(seen.tat);
      if (seen?.paused_until !== undefined && micros(seen.paused_until) > now) return waitOf(seen);
      if (tatSeen !== undefined && tatSeen > limit) return waitOf(seen);
      busy = tatSeen !== undefined && tatSeen >= now;
    }
    return waitOf(seen);
  }

  async pauseRate(pk: string, untilMs: number, expiresAt?: number): Promise<void> {
    await this.update(
      pk,
      {
        UpdateExpression: `SET #pu = :until${ttlSet(expiresAt)}`,
        // Never shortens a longer pause another worker learnt.
        ConditionExpression: 'attribute_not_exists(#pu) OR #pu < :until',
        ExpressionAttributeNames: { '#pu': 'paused_until', ...ttlName(expiresAt) },
        ExpressionAttributeValues: { ':until': num(untilMs), ...ttlValue(expiresAt) },
      },
      'UpdateItem (pause rate)',
      { readBack: false },
    );
  }

  async list(): Promise<LimitItem[]> {
    const items: LimitItem[] = [];
    let start: Record<string, AttributeValue> | undefined;
    try {
      do {
        const out = await this.client.send(
          new ScanCommand({
            TableName: this.tableName,
            ConsistentRead: true,
            ...(start === undefined ? {} : { ExclusiveStartKey: start }),
          }),
        );
        for (const item of out.Items ?? []) items.push(itemOf(item));
        start = out.LastEvaluatedKey;
      } while (start !== undefined);
    } catch (err) {
      throw storeError(err, 'Scan', undefined);
    }
    return items;
  }

  async noteRefusals(pk: string, count: number, at: number, expiresAt?: number): Promise<void> {
    await this.update(
      pk,
      {
        UpdateExpression: `SET #ra = :at${ttlSet(expiresAt)} ADD #refused :n`,
        ExpressionAttributeNames: { '#ra': 'refused_at', '#refused': 'refused', ...ttlName(expiresAt) },
        ExpressionAttributeValues: { ':at': num(at), ':n': num(count), ...ttlValue(expiresAt) },
      },
      'UpdateItem (note refusals)',
      { readBack: false },
    );
  }

  /**
   * One UpdateItem. A failed condition is an answer: `ok: false` with the item as it was (from
   * the exception, else a consistent GetItem; not read at all with `readBack: false`).
   */
  private async update(
    pk: string,
    input: Omit<UpdateItemCommandInput, 'TableName' | 'Key'>,
    operation: string,
    { readBack = true }: { readBack?: boolean } = {},
  ): Promise<
    { ok: true; attributes: Record<string, AttributeValue> | undefined } | { ok: false; item: LimitItem | undefined }
  > {
    try {
      const out = await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: { [PK]: { S: pk } },
          ...input,
          ...(input.ConditionExpression === undefined ? {} : { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' }),
        }),
      );
      return { ok: true, attributes: out.Attributes };
    } catch (err) {
      if (!(err instanceof ConditionalCheckFailedException)) throw storeError(err, operation, pk);
      if (!readBack) return { ok: false, item: undefined };
      return { ok: false, item: err.Item === undefined ? await this.get(pk) : itemOf(err.Item) };
    }
  }

  private async get(pk: string): Promise<LimitItem | undefined> {
    try {
      const out = await this.client.send(
        new GetItemCommand({ TableName: this.tableName, Key: { [PK]: { S: pk } }, ConsistentRead: true }),
      );
      return out.Item === undefined ? undefined : itemOf(out.Item);
    } catch (err) {
      throw storeError(err, 'GetItem', pk);
    }
  }
}

function waitOf(item: LimitItem | undefined): TakeRateResult {
  return {
    kind: 'wait',
    ...(item?.tat === undefined ? {} : { tat: item.tat }),
    ...(item?.paused_until === undefined ? {} : { pausedUntil: item.paused_until }),
  };
}

/** Epoch ms → whole microseconds (every time the limiter sends is on that grid). */
function micros(ms: number): number {
  return Math.round(ms * 1000);
}

/**
 * Whole microseconds as an exact decimal number of milliseconds (`2500` → `2.5`), so that no
 * float formatting can move a value off the grid before DynamoDB adds it.
 */
function decimal(us: number): AttributeValue {
  const sign = us < 0 ? '-' : '';
  const abs = Math.abs(us);
  const frac = abs % 1000;
  const whole = (abs - frac) / 1000;
  return { N: frac === 0 ? `${sign}${whole}` : `${sign}${whole}.${String(frac).padStart(3, '0').replace(/0+$/, '')}` };
}

function num(v: number): AttributeValue {
  return { N: String(v) };
}

function ttlSet(expiresAt: number | undefined): string {
  return expiresAt === undefined ? '' : ', #exp = :exp';
}
function ttlName(expiresAt: number | undefined): Record<string, string> {
  return expiresAt === undefined ? {} : { '#exp': TTL };
}
function ttlValue(expiresAt: number | undefined): Record<string, AttributeValue> {
  return expiresAt === undefined ? {} : { ':exp': num(expiresAt) };
}

/** The attributes of an item the limits use, type-checked (anything else is left out). */
function itemOf(raw: Record<string, AttributeValue>): LimitItem {
  const v = unmarshall(raw) as Record<string, unknown>;
  const n = (x: unknown): number | undefined => (typeof x === 'number' && Number.isFinite(x) ? x : undefined);
  const holders =
    typeof v.holders === 'object' && v.holders !== null
      ? Object.fromEntries(
          Object.entries(v.holders as Record<string, unknown>).filter(
            (e): e is [string, number] => n(e[1]) !== undefined,
          ),
        )
      : undefined;
  const fields = {
    tat: n(v.tat),
    paused_until: n(v.paused_until),
    refused: n(v.refused),
    refused_at: n(v.refused_at),
    expires_at: n(v[TTL]),
  };
  return {
    pk: String(v[PK]),
    ...(holders === undefined ? {} : { holders }),
    ...Object.fromEntries(Object.entries(fields).filter(([, x]) => x !== undefined)),
  };
}

/**
 * The store error for a failed request, naming the limit item when it was about one. No value of
 * a caller's is marshalled here, so a marshalling failure is not looked for.
 */
function storeError(
  err: unknown,
  operation: string,
  pk: string | undefined,
): StoreUnavailableError | StoreRejectedError {
  return dynamoStoreError(err, operation, {
    about: pk === undefined ? '' : ` (limit item "${pk}")`,
    marshallErrors: false,
  });
}
